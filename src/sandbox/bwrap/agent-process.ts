import { spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { InfraError, errorMessage } from "../../core/errors.js";
import { FrameDecoder, FrameType, encodeFrame, encodeJson, parseJson } from "../agent/protocol.js";
import type { ErrorReport, ExecRequest, ExitReport, ProxyConfig, ReadyReport } from "../agent/protocol.js";
import { BoundedOutput } from "../bounded-output.js";

/** The host process that becomes the sandbox (cgroup wrapper → setpriv → bwrap → node agent). */
export interface AgentLaunch {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Bytes the launch chain reads from fd 3 (bwrap's `--seccomp 3`: the compiled filter). */
  fd3?: Buffer;
}

/** How the agent's host process ended. */
export interface AgentExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last few KiB the agent (or the launch chain before it) wrote to stderr. */
  diagnostics: string;
}

export interface AgentRun {
  /** The command's own exit; null when the agent died before reporting it. */
  exit: ExitReport | null;
  /** The agent had spawned the command (false: it died before, the command never ran). */
  started: boolean;
  stdout: BoundedOutput;
  stderr: BoundedOutput;
  /** Set when the agent's process ended while this exec ran (the whole sandbox ended with it). */
  agentExit: AgentExit | undefined;
  /** The agent could not start the command (the proxy forwarder could not listen). */
  error: ErrorReport | undefined;
}

export interface AgentExec {
  result: Promise<AgentRun>;
  /** Asks the agent to kill the exec's tree now. */
  kill(): void;
}

interface Pending {
  run: AgentRun;
  resolve: (run: AgentRun) => void;
}

const DIAGNOSTICS_BYTES = 4096;

/**
 * Control-plane end of one sandbox's exec agent: spawns it, speaks the frame protocol, multiplexes execs. When the
 * agent's process ends, every pending exec resolves with `agentExit` set (the PID namespace, hence every command, ended
 * with it); the owner decides what that means and starts a new agent for the next exec.
 */
export class AgentProcess {
  readonly ready: Promise<ReadyReport>;
  readonly exited: Promise<AgentExit>;
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private exit: AgentExit | undefined;
  private diagnostics = Buffer.alloc(0);

  private constructor(launch: AgentLaunch) {
    this.child = spawn(launch.file, launch.args, { cwd: launch.cwd, env: launch.env, stdio: launch.fd3 ? ["pipe", "pipe", "pipe", "pipe"] : ["pipe", "pipe", "pipe"] });
    const fd3 = this.child.stdio[3];
    if (launch.fd3 && fd3 && "end" in fd3) {
      // Written and closed at once (a few hundred bytes fit the socket buffer): bwrap reads it to EOF at startup.
      fd3.on("error", () => undefined); // a launch chain that died before reading: reported through its exit
      fd3.end(launch.fd3, () => fd3.destroy());
    }
    let readyResolve!: (r: ReadyReport) => void;
    let readyReject!: (e: Error) => void;
    this.ready = new Promise((resolve, reject) => {
      readyResolve = resolve;
      readyReject = reject;
    });
    this.ready.catch(() => undefined); // observed by the owner; never an unhandled rejection
    const decoder = new FrameDecoder((type, id, payload) => {
      if (type === FrameType.ready) readyResolve(parseJson<ReadyReport>(payload));
      else this.onFrame(type, id, payload);
    });
    this.child.stdout?.on("data", (c: Buffer) => {
      try {
        decoder.push(c);
      } catch (e) {
        this.appendDiagnostics(`harnessrl: broken agent stream: ${errorMessage(e)}\n`);
        this.kill();
      }
    });
    this.child.stderr?.on("data", (c: Buffer) => this.appendDiagnostics(c));
    this.child.stdin?.on("error", () => {
      // the agent is gone; its exit is handled below
    });
    this.exited = new Promise((resolve) => {
      const done = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (this.exit) return;
        const exit: AgentExit = { code, signal, diagnostics: this.diagnostics.toString("utf8") };
        this.exit = exit;
        readyReject(new InfraError("sandbox_agent", `sandbox exec agent did not start (exit ${code ?? signal}): ${exit.diagnostics.trim()}`, { retryable: true }));
        for (const [id, p] of this.pending) {
          this.pending.delete(id);
          p.run.agentExit = exit;
          p.resolve(p.run);
        }
        resolve(exit);
      };
      this.child.on("error", (e) => {
        this.appendDiagnostics(`cannot start the sandbox: ${errorMessage(e)}\n`);
        done(null, null);
      });
      // 'close': all of stdout has been read, so every frame the agent sent has been handled.
      this.child.on("close", done);
    });
  }

  static start(launch: AgentLaunch): AgentProcess {
    return new AgentProcess(launch);
  }

  /** Host pid of the launch chain (the outer bwrap), if it started. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  private appendDiagnostics(chunk: Buffer | string): void {
    const all = Buffer.concat([this.diagnostics, typeof chunk === "string" ? Buffer.from(chunk) : chunk]);
    this.diagnostics = all.length > DIAGNOSTICS_BYTES ? all.subarray(all.length - DIAGNOSTICS_BYTES) : all;
  }

  private send(frame: Buffer): void {
    if (this.exit || !this.child.stdin?.writable) return;
    this.child.stdin.write(frame);
  }

  private onFrame(type: number, id: number, payload: Buffer): void {
    const p = this.pending.get(id);
    if (!p) return;
    switch (type) {
      case FrameType.started:
        p.run.started = true;
        return;
      case FrameType.stdout:
        p.run.stdout.push(payload);
        return;
      case FrameType.stderr:
        p.run.stderr.push(payload);
        return;
      case FrameType.exit:
        p.run.exit = parseJson<ExitReport>(payload);
        break;
      case FrameType.error:
        p.run.error = parseJson<ErrorReport>(payload);
        break;
      default:
        return;
    }
    this.pending.delete(id);
    p.resolve(p.run);
  }

  setProxy(config: ProxyConfig): void {
    this.send(encodeJson(FrameType.proxy, 0, config));
  }

  exec(request: Omit<ExecRequest, "stdin">, stdin: string | Uint8Array | undefined, limits: { stdout: number; stderr: number }): AgentExec {
    const id = this.nextId++;
    const run: AgentRun = { exit: null, started: false, stdout: new BoundedOutput(limits.stdout), stderr: new BoundedOutput(limits.stderr), agentExit: this.exit, error: undefined };
    if (this.exit) return { result: Promise.resolve(run), kill: () => undefined };
    const result = new Promise<AgentRun>((resolve) => this.pending.set(id, { run, resolve }));
    this.send(encodeJson(FrameType.exec, id, { ...request, stdin: stdin !== undefined } satisfies ExecRequest));
    if (stdin !== undefined) this.send(encodeFrame(FrameType.stdin, id, stdin));
    return { result, kill: () => this.send(encodeFrame(FrameType.kill, id)) };
  }

  /** SIGKILLs the launch chain; bwrap's init and with it the whole sandbox follow (its PID namespace ends). */
  kill(): void {
    if (this.exit || this.child.pid === undefined) return;
    try {
      this.child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }
}
