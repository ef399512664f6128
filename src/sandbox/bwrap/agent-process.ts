import { InfraError, errorMessage } from "../../core/errors.js";
import { FrameDecoder, FrameType, encodeFrame, encodeJson, parseJson } from "../agent/protocol.js";
import type { ErrorReport, ExecRequest, ExitReport, ProxyConfig, ReadyReport } from "../agent/protocol.js";
import { BoundedOutput } from "../bounded-output.js";
import type { Launcher } from "../launcher/client.js";
import { keepTail, type LaunchSpec, type Launched } from "../launcher/types.js";

/** The host process that becomes the sandbox (cgroup wrapper → setpriv → bwrap → node agent). */
export type AgentLaunch = LaunchSpec;

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

/**
 * Control-plane end of one sandbox's exec agent: spawns it, speaks the frame protocol, multiplexes execs. When the
 * agent's process ends, every pending exec resolves with `agentExit` set (the PID namespace, hence every command, ended
 * with it); the owner decides what that means and starts a new agent for the next exec.
 */
export class AgentProcess {
  readonly ready: Promise<ReadyReport>;
  readonly exited: Promise<AgentExit>;
  private readonly process: Launched;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private exit: AgentExit | undefined;
  /** This side's own notes (a broken stream); the launch chain's stderr comes with its exit. */
  private notes: Buffer = Buffer.alloc(0);

  private constructor(launcher: Launcher, launch: AgentLaunch) {
    this.process = launcher.launch(launch);
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
    this.process.onOutput((c) => {
      try {
        decoder.push(c);
      } catch (e) {
        this.notes = keepTail(this.notes, `harnessrl: broken agent stream: ${errorMessage(e)}\n`);
        this.kill();
      }
    });
    // Resolves once everything the agent sent has been handled.
    this.exited = this.process.exited.then(({ code, signal, diagnostics }) => {
      const exit: AgentExit = { code, signal, diagnostics: keepTail(Buffer.from(diagnostics), this.notes).toString("utf8") };
      this.exit = exit;
      readyReject(new InfraError("sandbox_agent", `sandbox exec agent did not start (exit ${code ?? signal}): ${exit.diagnostics.trim()}`, { retryable: true }));
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        p.run.agentExit = exit;
        p.resolve(p.run);
      }
      return exit;
    });
  }

  static start(launcher: Launcher, launch: AgentLaunch): AgentProcess {
    return new AgentProcess(launcher, launch);
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  private send(frame: Buffer): void {
    if (!this.exit) this.process.write(frame);
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
    if (!this.exit) this.process.kill();
  }
}
