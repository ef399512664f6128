import { existsSync, readdirSync, realpathSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { RUN_MARKERS, RunData } from "./run-data.js";

/** Most runs listed (a directory of thousands of runs is not what this page is for; the newest are kept). */
const MAX_RUNS = 500;

/** Ids are directory names: safe in URLs and never a path (no separators, not `.` or `..`). */
export function isRunId(id: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/.test(id) && id !== "." && id !== "..";
}

function isRunDir(dir: string): boolean {
  return RUN_MARKERS.some((m) => existsSync(join(dir, m)));
}

/**
 * The runs under one directory: the directory itself when it is a run, else its subdirectories that are. A run is
 * found by its id only (a lookup in this table), so a request can never name a path.
 */
export class RunCatalog {
  readonly root: string;
  private readonly runs = new Map<string, RunData>();

  constructor(root: string) {
    this.root = realpathSync(root);
  }

  /** Rescans the directory (new runs appear, deleted ones go) and returns the runs, newest first. */
  scan(): RunData[] {
    const found = new Map<string, string>();
    if (isRunDir(this.root)) {
      const id = isRunId(basename(this.root)) ? basename(this.root) : "run";
      found.set(id, this.root);
    } else {
      for (const e of readdirSync(this.root, { withFileTypes: true })) {
        if (!e.isDirectory() || !isRunId(e.name)) continue;
        const dir = join(this.root, e.name);
        if (isRunDir(dir)) found.set(e.name, dir);
      }
    }
    for (const [id, run] of this.runs) {
      if (found.get(id) !== run.dir) {
        run.close();
        this.runs.delete(id);
      }
    }
    const byAge = [...found].sort((a, b) => mtime(b[1]) - mtime(a[1])).slice(0, MAX_RUNS);
    for (const [id, dir] of byAge) if (!this.runs.has(id)) this.runs.set(id, new RunData(id, dir));
    return byAge.map(([id]) => this.runs.get(id) as RunData);
  }

  get(id: string): RunData | null {
    if (!isRunId(id)) return null;
    if (!this.runs.has(id)) this.scan();
    return this.runs.get(id) ?? null;
  }

  /** Runs already loaded (the live poller's set). */
  loaded(): RunData[] {
    return [...this.runs.values()];
  }

  close(): void {
    for (const r of this.runs.values()) r.close();
    this.runs.clear();
  }
}

function mtime(dir: string): number {
  try {
    return statSync(dir).mtimeMs;
  } catch {
    return 0;
  }
}
