import { fork, type ChildProcess } from "node:child_process";
import type { Socket } from "node:net";
import { launchDirect } from "./direct.js";
import { isFromLauncher, type ExitedReport, type ToLauncher } from "./protocol.js";
import type { LaunchExit, LaunchSpec, Launched } from "./types.js";
import { compiledScript } from "../../core/compiled-script.js";
import { killChild } from "../../core/kill-child.js";

/** Set to `direct` to spawn sandboxes from this process by default (BwrapBackendOptions.launcher). */
export const LAUNCHER_ENV = "HARNESSRL_SANDBOX_LAUNCHER";

/** One process started through the launcher process, seen from the control plane. */
class Remote implements Launched {
  private socket: Socket | undefined;
  private queued: Buffer[] = [];
  private listener: ((chunk: Buffer) => void) | undefined;
  private report: ExitedReport | undefined;
  /** The control channel ended (or never came): everything the process wrote has been delivered. */
  private channelDone = false;
  private ended = false;
  private resolveExit!: (exit: LaunchExit) => void;
  readonly exited: Promise<LaunchExit>;

  constructor(
    readonly id: number,
    private readonly send: (message: ToLauncher) => void,
    private readonly settled: () => void,
  ) {
    this.exited = new Promise((resolve) => (this.resolveExit = resolve));
  }

  write(chunk: Buffer): void {
    if (this.ended) return;
    if (this.socket) {
      if (this.socket.writable) this.socket.write(chunk);
    } else {
      // The frame encoder reuses nothing, but a caller's buffer may be a view: keep a copy while it waits.
      this.queued.push(Buffer.from(chunk));
    }
  }

  onOutput(listener: (chunk: Buffer) => void): void {
    this.listener = listener;
  }

  kill(): void {
    if (!this.ended) this.send({ t: "kill", id: this.id });
  }

  /** The launcher sent the channel (or could not: `socket` undefined). */
  attach(socket: Socket | undefined): void {
    if (!socket || this.ended) {
      socket?.destroy();
      this.channelDone = true;
      this.maybeEnd();
      return;
    }
    this.socket = socket;
    socket.on("error", () => undefined); // the process died mid-write: its exit is reported by the launcher
    socket.on("data", (c: Buffer) => this.listener?.(c));
    socket.on("close", () => {
      this.channelDone = true;
      this.maybeEnd();
    });
    for (const chunk of this.queued.splice(0)) socket.write(chunk);
  }

  exitedWith(report: ExitedReport): void {
    this.report = report;
    if (!this.socket) this.channelDone = true; // never started: there is no channel to wait for
    this.maybeEnd();
  }

  /** The launcher process itself died: its processes went with it (bwrap --die-with-parent). */
  launcherGone(): void {
    this.report ??= { t: "exited", id: this.id, code: null, signal: "SIGKILL", diagnostics: "harnessrl: the sandbox launcher process exited\n" };
    if (!this.socket) this.channelDone = true;
    this.maybeEnd();
  }

  private maybeEnd(): void {
    if (this.ended || !this.report || !this.channelDone) return;
    this.ended = true;
    this.queued = [];
    this.socket?.destroy();
    const { code, signal, diagnostics } = this.report;
    this.resolveExit({ code, signal, diagnostics });
    this.settled();
  }
}

/**
 * Starts sandboxes' launch chains from a small child process (main.ts: why), with a fallback to spawning here when
 * the launcher is not built (tests from source), cannot start, or keeps dying: sandboxes work either way, only the
 * control plane's cost differs.
 */
export class Launcher {
  private child: ChildProcess | undefined;
  private readonly running = new Map<number, Remote>();
  private nextId = 1;
  private failures = 0;

  /** `script`: the compiled launcher (null: always spawn in this process). */
  constructor(private readonly script: string | null) {}

  launch(spec: LaunchSpec): Launched {
    const child = this.launcher();
    if (!child?.connected) return launchDirect(spec);
    const id = this.nextId++;
    const remote = new Remote(id, (m) => this.post(m), () => this.forget(id));
    this.running.set(id, remote);
    this.holdOpen();
    this.post({ t: "spawn", id, file: spec.file, args: spec.args, cwd: spec.cwd, env: spec.env, ...(spec.fd3 ? { fd3: spec.fd3.toString("base64") } : {}) });
    return remote;
  }

  /** Whether a launcher process serves (false: spawning in this process). */
  get external(): boolean {
    return this.child !== undefined;
  }

  /** The launcher process's pid, while one serves. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Stops the launcher process (what it started dies with it); later launches spawn here. */
  close(): void {
    if (this.child) killChild(this.child, "SIGKILL");
    this.failures = Number.POSITIVE_INFINITY;
  }

  private post(message: ToLauncher): void {
    if (this.child?.connected) this.child.send(message, undefined, undefined, () => undefined);
  }

  private forget(id: number): void {
    this.running.delete(id);
    this.holdOpen();
  }

  /** The channel keeps this process alive only while a launched process has not reported its end. */
  private holdOpen(): void {
    const channel = this.child?.channel as { ref?: () => void; unref?: () => void } | null | undefined;
    if (this.running.size > 0) channel?.ref?.();
    else channel?.unref?.();
  }

  private launcher(): ChildProcess | undefined {
    if (this.child || !this.script || this.failures >= 3) return this.child;
    let child: ChildProcess;
    try {
      // No execArgv: the control plane's own flags (a profiler, a heap size) are not the launcher's.
      child = fork(this.script, [], { execArgv: [], stdio: ["ignore", "ignore", "inherit", "ipc"] });
    } catch {
      this.failures++;
      return undefined;
    }
    this.child = child;
    child.unref();
    child.on("message", (m: unknown, handle: unknown) => {
      if (!isFromLauncher(m)) return;
      const remote = this.running.get(m.id);
      if (m.t === "spawned") {
        if (remote) remote.attach(handle as Socket | undefined);
        else (handle as Socket | undefined)?.destroy();
      } else {
        remote?.exitedWith(m);
      }
    });
    const gone = (): void => {
      if (this.child !== child) return;
      this.child = undefined;
      this.failures++;
      for (const remote of this.running.values()) remote.launcherGone();
    };
    child.on("error", gone);
    child.on("exit", gone);
    this.holdOpen();
    return child;
  }
}

/** The compiled launcher next to this module, or in dist/ when this module runs from its TypeScript source (tests). */
export function launcherScript(): string | undefined {
  return compiledScript(new URL("./main.js", import.meta.url));
}

let shared: Launcher | undefined;

/**
 * "process": the control plane's one launcher process (started with its first sandbox, shared by every backend);
 * "direct": spawning in this process. Default: HARNESSRL_SANDBOX_LAUNCHER, else "process".
 */
export function launcherFor(mode: "process" | "direct" | undefined): Launcher {
  if ((mode ?? (process.env[LAUNCHER_ENV] === "direct" ? "direct" : "process")) === "direct") return new Launcher(null);
  shared ??= new Launcher(launcherScript() ?? null);
  return shared;
}
