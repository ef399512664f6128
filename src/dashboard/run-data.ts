import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { join, sep } from "node:path";
import { PROGRESS_FILE, readProgressFile, type ProgressTask } from "../core/progress-file.js";
import { SqliteStore } from "../store/sqlite.js";
import { EvalProgressReader, type EvalProgress } from "./eval-progress.js";
import { JsonlTail } from "./jsonl-tail.js";
import { RolloutIndex } from "./rollout-index.js";

/** Files whose presence makes a directory a run (what train / eval / rollout write). */
export const RUN_MARKERS = ["state.json", "metrics.jsonl", "rollouts.jsonl", "records.sqlite", "summary.json", "eval.json"];

/** A run is "running" while one of its files changed this recently. */
const ACTIVE_MS = 120_000;

export type RunStatus = "running" | "finished" | "stopped";

/** One line of the runs list. */
export interface RunSummary {
  id: string;
  status: RunStatus;
  step: number | null;
  plannedSteps: number | null;
  policyVersion: number | null;
  /** Held-out pass@1 before and after RL (eval-before/after.json; a standalone `eval` run's eval.json counts as after). */
  passBefore: number | null;
  passAfter: number | null;
  wallSeconds: number | null;
  rollouts: number;
  metricsLines: number;
  updatedAt: number;
  /** An evaluation the run is in the middle of (its journal has fewer results than it plans), else null. */
  evaluating: EvalProgress | null;
  /** The long work a running run reports in progress.json (warm start, SFT, a step's rollouts, RL steps); [] otherwise. */
  progress: ProgressTask[];
}

/** What changed in a run since the last poll (what the live stream announces). */
export interface RunChanges {
  metrics: number;
  rollouts: string[];
  reset: boolean;
  files: boolean;
}

function readJson(path: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(readFileSync(path, "utf8"));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

const numOrNull = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

function overallPass(summary: Record<string, unknown> | null): number | null {
  const overall = summary?.overall as Record<string, unknown> | undefined;
  return numOrNull(overall?.passAt1);
}

/**
 * One run directory as the dashboard reads it: its metrics and rollouts tailed incrementally, its small JSON files
 * re-read when they change, its call store opened read-only on first use. Paths are fixed names under `dir`; nothing
 * a request says is joined onto them.
 */
export class RunData {
  readonly metrics: Record<string, unknown>[] = [];
  readonly rollouts = new RolloutIndex();
  private readonly metricsTail: JsonlTail;
  private readonly rolloutsTail: JsonlTail;
  private readonly evalProgress: EvalProgressReader;
  /** The evaluation in progress as of the last poll. */
  private evaluating: EvalProgress | null = null;
  private store: SqliteStore | null = null;
  private fileStamp = "";
  private progressStamp = "";
  private progressTasks: ProgressTask[] = [];
  /** Bumped whenever a poll found something new: what the live stream compares (API reads poll too). */
  generation = 0;
  private readonly memo = new Map<string, { generation: number; value: unknown }>();
  private cachedFiles: Record<string, Record<string, unknown> | null> = {};

  constructor(
    readonly id: string,
    readonly dir: string,
  ) {
    this.metricsTail = new JsonlTail(join(dir, "metrics.jsonl"));
    this.rolloutsTail = new JsonlTail(join(dir, "rollouts.jsonl"));
    this.evalProgress = new EvalProgressReader(dir);
  }

  /** Reads what was appended or rewritten since the last call. */
  poll(): RunChanges {
    const m = this.metricsTail.poll();
    if (m.reset) this.metrics.length = 0;
    this.metrics.push(...m.rows);
    const r = this.rolloutsTail.poll();
    if (r.reset) this.rollouts.clear();
    const added = this.rollouts.add(r.rows);
    const stamp = ["state.json", "summary.json", "eval-before.json", "eval-after.json", "eval.json"].map((f) => this.mtime(f)).join(",");
    // A long evaluation appends to its journal only: each result is news for the runs list.
    const before = this.evaluating;
    this.evaluating = this.evalProgress.current();
    const evalChanged = before?.label !== this.evaluating?.label || before?.done !== this.evaluating?.done;
    const files = stamp !== this.fileStamp || evalChanged;
    if (files) {
      this.fileStamp = stamp;
      this.cachedFiles = {};
    }
    const progressChanged = this.pollProgress();
    const changes = { metrics: m.rows.length, rollouts: added.map((x) => x.rolloutId), reset: m.reset || r.reset, files };
    if (changes.metrics > 0 || changes.rollouts.length > 0 || changes.reset || files || progressChanged) this.generation++;
    return changes;
  }

  /** Re-reads progress.json when its size or modification time changed; true when it did. */
  private pollProgress(): boolean {
    let stamp = "";
    try {
      const st = statSync(join(this.dir, PROGRESS_FILE));
      stamp = `${st.mtimeMs}:${st.size}`;
    } catch {
      // no progress file: nothing in progress that the run reports
    }
    if (stamp === this.progressStamp) return false;
    this.progressStamp = stamp;
    this.progressTasks = stamp === "" ? [] : (readProgressFile(join(this.dir, PROGRESS_FILE))?.tasks ?? []);
    return true;
  }

  /** `make()`'s value, computed again only after a poll found something new (charts of thousands of steps). */
  derived<T>(key: string, make: () => T): T {
    const hit = this.memo.get(key);
    if (hit && hit.generation === this.generation) return hit.value as T;
    const value = make();
    this.memo.set(key, { generation: this.generation, value });
    return value;
  }

  /** A small JSON file of the run (fixed names only), cached until its mtime changes. */
  json(name: "state.json" | "summary.json" | "eval-before.json" | "eval-after.json" | "eval.json"): Record<string, unknown> | null {
    if (!(name in this.cachedFiles)) this.cachedFiles[name] = readJson(join(this.dir, name));
    return this.cachedFiles[name] ?? null;
  }

  summary(now = Date.now()): RunSummary {
    const state = this.json("state.json");
    const summary = this.json("summary.json");
    const lastStep = [...this.metrics].reverse().find((r) => typeof r.step === "number");
    const evaluating = this.evaluating;
    // A warm start commits nothing for many minutes; its progress file shows the run is alive.
    const updatedAt = Math.max(0, ...RUN_MARKERS.map((f) => this.mtime(f)), this.mtime("records.sqlite-wal"), this.mtime(PROGRESS_FILE), evaluating?.updatedAt ?? 0);
    const status: RunStatus = summary ? "finished" : now - updatedAt < ACTIVE_MS ? "running" : "stopped";
    const startedAt = numOrNull(state?.startedAt);
    return {
      id: this.id,
      status,
      step: numOrNull(state?.step) ?? numOrNull(lastStep?.step),
      plannedSteps: numOrNull(summary?.plannedSteps),
      policyVersion: numOrNull(state?.policyVersion) ?? numOrNull(lastStep?.policy_version),
      passBefore: overallPass(this.json("eval-before.json")),
      passAfter: overallPass(this.json("eval-after.json")) ?? overallPass(this.json("eval.json")),
      wallSeconds: numOrNull(summary?.wallSeconds) ?? (startedAt !== null ? Math.max(0, (updatedAt - startedAt) / 1000) : null),
      rollouts: this.rollouts.size,
      metricsLines: this.metrics.length,
      updatedAt,
      evaluating,
      progress: status === "running" ? this.progressTasks : [],
    };
  }

  /** The run's call store, read-only (null when the run has none). Opened once and kept: the writer may still be appending. */
  openStore(): SqliteStore | null {
    if (this.store) return this.store;
    const path = join(this.dir, "records.sqlite");
    if (!existsSync(path)) return null;
    this.store = new SqliteStore(path, { readonly: true });
    return this.store;
  }

  /** The newest saved policy directory (its tokenizer decodes the token view), if any. */
  latestPolicyDir(): string | null {
    const root = join(this.dir, "policy");
    if (!existsSync(root)) return null;
    const versions = readdirSync(root).filter((e) => /^v\d+$/.test(e)).sort();
    const last = versions[versions.length - 1];
    return last === undefined ? null : join(root, last);
  }

  /**
   * The run's report.html when it is a file inside the run directory: a symlink pointing elsewhere is not served
   * (the one file the server sends from a run, by a fixed name).
   */
  reportPath(): string | null {
    try {
      const real = realpathSync(join(this.dir, "report.html"));
      return real.startsWith(realpathSync(this.dir) + sep) && statSync(real).isFile() ? real : null;
    } catch {
      return null;
    }
  }

  close(): void {
    this.store?.close();
    this.store = null;
  }

  private mtime(name: string): number {
    try {
      return statSync(join(this.dir, name)).mtimeMs;
    } catch {
      return 0;
    }
  }
}
