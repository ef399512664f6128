import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { z } from "zod";
import type { ProgressSink, ProgressUpdate } from "./progress.js";

/**
 * `progress.json` in a run directory: the long work a run is in the middle of (demonstrations, SFT, a step's
 * rollouts, an evaluation, the RL steps), rewritten as it advances, so the dashboard can show "sft 60/127" during a
 * 20-minute warm start that commits nothing until it ends. Not part of the commit protocol: a killed run leaves it
 * stale, and readers show it only while the run is active.
 */
export const PROGRESS_FILE = "progress.json";

const taskSchema = z.object({
  label: z.string().max(200),
  done: z.number().int().nonnegative(),
  total: z.number().int().nonnegative(),
  detail: z.string().max(500),
  startedAt: z.number(),
  updatedAt: z.number(),
});
export const progressFileSchema = z.object({ version: z.literal(1), pid: z.number().int(), updatedAt: z.number(), tasks: z.array(taskSchema).max(64) });
export type ProgressTask = z.infer<typeof taskSchema>;
export type ProgressFileContents = z.infer<typeof progressFileSchema>;

/** Rewrites at most this often while only counts change (a step's rollouts finish a few per second at most). */
const MIN_WRITE_MS = 1_000;
/**
 * While work is in progress the file is rewritten at least this often, even when no count moved (a trainer step of
 * several minutes): a fresh file means a live process, which is how the dashboard tells "running" from "stopped".
 */
export const PROGRESS_HEARTBEAT_MS = 30_000;

/**
 * The writer: keeps every unfinished piece of work by label (an RL step's "train 4/10" stays while "step 5 rollouts"
 * and then an evaluation come and go) and writes them atomically (temporary file + rename), immediately when a piece
 * starts or finishes, otherwise at most once a second (an update inside that second is written when it ends).
 */
export class ProgressFile implements ProgressSink {
  private readonly tasks = new Map<string, ProgressTask>();
  private lastWrite = 0;
  private failed = false;
  /** A throttled update waits for this timer (unref'd: it never keeps a finished process alive). */
  private pending: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;

  constructor(
    private readonly path: string,
    private readonly now: () => number = Date.now,
  ) {}

  update(p: ProgressUpdate): void {
    const now = this.now();
    const known = this.tasks.has(p.label);
    const finished = p.done >= p.total;
    if (finished) this.tasks.delete(p.label);
    else this.tasks.set(p.label, { label: p.label.slice(0, 200), done: p.done, total: p.total, detail: p.detail.slice(0, 500), startedAt: p.startedAt, updatedAt: now });
    const changed = known !== this.tasks.has(p.label);
    const wait = this.lastWrite + MIN_WRITE_MS - now;
    if (changed || wait <= 0) this.write(now);
    else this.pending ??= setTimeout(() => this.write(this.now()), wait).unref();
  }

  private write(now: number): void {
    if (this.pending) clearTimeout(this.pending);
    this.pending = null;
    if (this.tasks.size > 0) this.heartbeat ??= setInterval(() => this.write(this.now()), PROGRESS_HEARTBEAT_MS).unref();
    else if (this.heartbeat) {
      clearInterval(this.heartbeat);
      this.heartbeat = null;
    }
    // Progress is a view: a full disk or a removed directory must not fail the run that reports it.
    if (this.failed) return;
    this.lastWrite = now;
    const contents: ProgressFileContents = { version: 1, pid: process.pid, updatedAt: now, tasks: [...this.tasks.values()].slice(-64) };
    const tmp = `${this.path}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, `${JSON.stringify(contents)}\n`);
      renameSync(tmp, this.path);
    } catch {
      this.failed = true;
    }
  }
}

/** The file's contents if it is a progress file (anything else, or a torn write, reads as none). */
export function readProgressFile(path: string): ProgressFileContents | null {
  try {
    const parsed = progressFileSchema.safeParse(JSON.parse(readFileSync(path, "utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
