import { spawn } from "node:child_process";
import { InfraError, errorMessage } from "../core/errors.js";
import { BoundedOutput } from "./bounded-output.js";

export interface RunSpec {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  stdin?: string | Uint8Array;
  timeoutMs: number;
  stdoutLimit: number;
  stderrLimit: number;
  /** New process group (the local backend kills the group). */
  detached: boolean;
}

export interface RunHooks {
  /** Called synchronously once the process exists (so a concurrent destroy can kill it before it finishes starting). */
  onSpawn?(pid: number): void;
  /** Kill the command's whole tree (called at the timeout, and after the leader exits to stop stragglers). */
  killTree(pid: number, reason: "timeout" | "exited"): void;
}

export interface RawRun {
  pid: number;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: BoundedOutput;
  stderr: BoundedOutput;
  timedOut: boolean;
  durationMs: number;
}

/** After the leader exits, how long stray holders of its stdout/stderr may keep them open before we stop reading. */
const CLOSE_GRACE_MS = 2000;

/** Spawns one command with bounded output capture and a wall-clock timeout; shared by every backend. */
export function runProcess(spec: RunSpec, hooks: RunHooks): Promise<RawRun> {
  const started = performance.now();
  return new Promise<RawRun>((resolve, reject) => {
    const child = spawn(spec.file, spec.args, {
      cwd: spec.cwd,
      env: spec.env,
      detached: spec.detached,
      stdio: [spec.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    if (child.pid !== undefined) hooks.onSpawn?.(child.pid);
    const stdout = new BoundedOutput(spec.stdoutLimit);
    const stderr = new BoundedOutput(spec.stderrLimit);
    child.stdout?.on("data", (c: Buffer) => stdout.push(c));
    child.stderr?.on("data", (c: Buffer) => stderr.push(c));
    let timedOut = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let graceTimer: NodeJS.Timeout | undefined;
    let done = false;

    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) hooks.killTree(child.pid, "timeout");
    }, Math.max(0, spec.timeoutMs));

    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (graceTimer) clearTimeout(graceTimer);
      resolve({
        pid: child.pid ?? -1,
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        stdout,
        stderr,
        timedOut,
        durationMs: performance.now() - started,
      });
    };

    child.on("error", (e: NodeJS.ErrnoException) => {
      if (done) return;
      if (e.code === "ENOENT" || e.code === "EACCES") {
        // Same shape as a shell reports it (127 not found / 126 not executable), whatever the backend.
        stderr.push(Buffer.from(`cannot run ${spec.file}: ${e.code === "ENOENT" ? "not found" : "permission denied"}\n`));
        exit = { code: e.code === "ENOENT" ? 127 : 126, signal: null };
        finish();
        return;
      }
      done = true;
      clearTimeout(timer);
      reject(new InfraError("sandbox_spawn", `cannot start ${spec.file}: ${errorMessage(e)}`, { cause: e, retryable: true }));
    });
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      if (child.pid !== undefined) hooks.killTree(child.pid, "exited");
      graceTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish();
      }, CLOSE_GRACE_MS);
    });
    child.on("close", (code, signal) => {
      exit ??= { code, signal };
      finish();
    });

    if (spec.stdin !== undefined && child.stdin) {
      child.stdin.on("error", () => {
        // the command may exit without reading its input (EPIPE)
      });
      child.stdin.end(spec.stdin);
    }
  });
}
