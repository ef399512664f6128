import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { diskUsage } from "../disk-usage.js";
import { compiledScript } from "../../core/compiled-script.js";
import { killChild } from "../../core/kill-child.js";

/**
 * The control plane's side of the disk meter (main.ts: why measuring runs in a small child process). `measure` asks
 * the meter and falls back to measuring in this process when the meter is not built (tests from source), cannot
 * start, or dies: the budget is enforced either way, only the cost differs.
 */
export class DiskMeter {
  private child: ChildProcess | undefined;
  private readonly pending = new Map<number, { resolve: (bytes: number) => void; roots: string[] }>();
  private nextId = 1;
  /** Starts that failed or meters that died; after a few, this process measures for itself. */
  private failures = 0;

  constructor(private readonly script: string | undefined = meterScript()) {}

  /** Allocated bytes below `roots` (absolute paths; symlinks not followed). */
  measure(roots: string[]): Promise<number> {
    const child = this.meter();
    if (!child?.stdin?.writable) return diskUsage(roots);
    const id = this.nextId++;
    return new Promise<number>((resolve) => {
      this.pending.set(id, { resolve, roots });
      this.holdOpen(child);
      child.stdin?.write(`${JSON.stringify({ id, roots })}\n`);
    });
  }

  /** The meter keeps this process alive only while it owes answers (an idle meter never does). */
  private holdOpen(child: ChildProcess): void {
    const out = child.stdout as unknown as { ref?: () => void; unref?: () => void } | null;
    if (this.pending.size > 0) out?.ref?.();
    else out?.unref?.();
  }

  /** Stops the meter (it also exits by itself when this process ends: its stdin closes). */
  close(): void {
    if (this.child) killChild(this.child, "SIGKILL");
    this.child = undefined;
    this.measureHere();
  }

  /** Whether a meter process is serving (false: measuring in this process). */
  get external(): boolean {
    return this.child !== undefined;
  }

  /** The meter process's pid, while one serves. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  private meter(): ChildProcess | undefined {
    if (this.child || !this.script || this.failures >= 3) return this.child;
    const child = spawn(process.execPath, [this.script], { stdio: ["pipe", "pipe", "ignore"] });
    this.child = child;
    // Never keeps the control plane alive on its own.
    child.unref();
    for (const s of [child.stdin, child.stdout]) (s as unknown as { unref?: () => void } | null)?.unref?.();
    child.stdin?.on("error", () => undefined);
    createInterface({ input: child.stdout! }).on("line", (line) => this.answer(line));
    const gone = (): void => {
      if (this.child !== child) return;
      this.child = undefined;
      this.failures++;
      this.measureHere();
    };
    child.on("error", gone);
    child.on("exit", gone);
    return child;
  }

  /** Whatever the meter still owed is measured in this process instead. */
  private measureHere(): void {
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      void diskUsage(p.roots).then(p.resolve);
    }
  }

  private answer(line: string): void {
    let v: { id?: unknown; bytes?: unknown };
    try {
      v = JSON.parse(line) as typeof v;
    } catch {
      return;
    }
    const p = typeof v.id === "number" ? this.pending.get(v.id) : undefined;
    if (!p) return;
    this.pending.delete(v.id as number);
    if (this.child) this.holdOpen(this.child);
    if (typeof v.bytes === "number" && Number.isFinite(v.bytes)) p.resolve(v.bytes);
    else void diskUsage(p.roots).then(p.resolve); // the meter's du failed: measure here
  }
}

/** The compiled meter next to this module, or in dist/ when this module runs from its TypeScript source (tests). */
function meterScript(): string | undefined {
  return compiledScript(new URL("./main.js", import.meta.url));
}

let shared: DiskMeter | undefined;

/** One meter per control plane, started at the first measurement. */
export function sharedDiskMeter(): DiskMeter {
  shared ??= new DiskMeter();
  return shared;
}
