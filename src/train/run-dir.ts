import { appendFileSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { open, readdir, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { PROGRESS_FILE, ProgressFile } from "../core/progress-file.js";
import type { ProgressSink } from "../core/progress.js";
import { faultPoint } from "./fault.js";

/** What a run has finished so far: enough to resume after a crash at the next step boundary. */
export interface RunState {
  version: 1;
  /** Optimizer steps of RL training completed. */
  step: number;
  /** Policy version of the latest saved policy (init 0, warm start 1, then one per step). */
  policyVersion: number;
  warmStartDone: boolean;
  evalBeforeDone: boolean;
  /** Position in the shuffled training task list. */
  taskCursor: number;
  /** Trainer checkpoint directory of the last completed step, if any. */
  checkpoint: string | null;
  startedAt: number;
  /** Training wall time accumulated over all sessions of this run (ms). */
  trainMs: number;
  /** The harness scheduler's state (scheduled mix-harness mode). */
  scheduler?: unknown;
  /** The policy version RL started from: the reference of `algorithm.kl_coef` (its directory is kept). */
  referenceVersion?: number;
  /** Committed length of metrics.jsonl in bytes: anything after it belongs to an uncommitted step (absent: older runs). */
  metricsBytes?: number;
  /** The step whose mid-run evaluation (`eval.every`) is committed. */
  evalStep?: number;
  /** Committed length of rollouts.jsonl in bytes: lines after it are rollouts of an uncommitted step (absent: older runs). */
  rolloutsBytes?: number;
  /** Committed length of probes.jsonl (probe harnesses' rollouts, never trained on) in bytes, like `rolloutsBytes`. */
  probesBytes?: number;
}

/** What one commit makes durable together with the new state. */
export interface CommitParts {
  /** Files or directories written for this state (policy version, checkpoint): fsynced before the state names them. */
  written?: string[];
  /** Metrics rows of this state, appended before the switch. */
  metrics?: Record<string, unknown>[];
  /**
   * The step's rollout results (rollouts.jsonl lines), appended before the switch: written only here, so a step redone
   * after a crash leaves its interrupted attempt's lines out (cut on resume) instead of appending them twice.
   */
  rollouts?: unknown[];
  /** The step's probe rollouts (probes.jsonl lines; never trained on, so kept out of rollouts.jsonl), like `rollouts`. */
  probes?: unknown[];
  /** The step the commit belongs to (fault points). */
  step: number;
}

/** fsync a file or directory (directories make their entries' creation, rename and removal durable). */
function fsyncPath(p: string): void {
  const fd = openSync(p, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Asynchronous: a multi-GB checkpoint must not block the event loop (the proxy serves async rollouts meanwhile). */
async function fsyncTree(p: string): Promise<void> {
  if ((await stat(p)).isDirectory()) for (const e of await readdir(p)) await fsyncTree(join(p, e));
  const fh = await open(p, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * The layout of a run directory and its small persistent files. `state.json` is the run's one commit pointer: a step
 * is durable once the state naming it is renamed into place, and everything it does not name (newer policy versions,
 * other checkpoints, metrics bytes past `metricsBytes`, `*.tmp`) is uncommitted or retired and removed on resume.
 */
export class RunDir {
  private progressFile: ProgressFile | null = null;

  constructor(readonly root: string) {
    mkdirSync(root, { recursive: true });
  }

  /** progress.json's writer: the long work the run is in the middle of, for the dashboard (src/core/progress-file.ts). */
  get progress(): ProgressSink {
    return (this.progressFile ??= new ProgressFile(join(this.root, PROGRESS_FILE)));
  }

  get configPath(): string {
    return join(this.root, "config.yaml");
  }
  get metricsPath(): string {
    return join(this.root, "metrics.jsonl");
  }
  get rolloutsPath(): string {
    return join(this.root, "rollouts.jsonl");
  }
  get probesPath(): string {
    return join(this.root, "probes.jsonl");
  }
  get storeSpec(): string {
    return `sqlite:${join(this.root, "records.sqlite")}`;
  }
  get demoStoreSpec(): string {
    return `sqlite:${join(this.root, "demos.sqlite")}`;
  }
  policyDir(version: number): string {
    return join(this.root, "policy", `v${String(version).padStart(4, "0")}`);
  }
  /** Results of one evaluation as they finish (src/eval/journal.ts), kept after it ends. */
  evalJournalPath(label: string): string {
    return join(this.root, "evals", `${label}.jsonl`);
  }
  checkpointDir(step: number): string {
    return join(this.root, "checkpoints", `step-${String(step).padStart(4, "0")}`);
  }
  path(name: string): string {
    return join(this.root, name);
  }

  readState(): RunState | null {
    const p = join(this.root, "state.json");
    if (!existsSync(p)) return null;
    return JSON.parse(readFileSync(p, "utf8")) as RunState;
  }

  /** Writes the state pointer durably (tmp + fsync, rename, fsync the directory). */
  writeState(state: RunState): void {
    this.writeJson("state.json", state);
  }

  writeJson(name: string, value: unknown): void {
    const p = join(this.root, name);
    writeFileSync(`${p}.tmp`, `${JSON.stringify(value, null, 2)}\n`);
    fsyncPath(`${p}.tmp`);
    renameSync(`${p}.tmp`, p);
    fsyncPath(this.root);
  }

  /**
   * The commit protocol: fsync what the new state names, append its metrics rows (fsynced), switch state.json, and
   * only then delete what the old state named. A kill before the switch leaves the old state in force (its files
   * intact); a kill after it leaves the new one with garbage that `recover` removes.
   */
  async commit(state: RunState, parts: CommitParts): Promise<RunState> {
    for (const p of parts.written ?? []) await fsyncTree(p);
    for (const p of parts.written ?? []) fsyncPath(dirname(p));
    faultPoint("after-checkpoint-write", parts.step);
    if (parts.rollouts?.length) appendFileSync(this.rolloutsPath, parts.rollouts.map((r) => `${JSON.stringify(r)}\n`).join(""));
    if (parts.probes?.length) appendFileSync(this.probesPath, parts.probes.map((r) => `${JSON.stringify(r)}\n`).join(""));
    if (parts.metrics?.length) {
      appendFileSync(this.metricsPath, parts.metrics.map((r) => `${JSON.stringify(r)}\n`).join(""));
      faultPoint("after-metrics-append", parts.step);
    }
    const probesBytes = sizeOf(this.probesPath);
    const committed: RunState = { ...state, metricsBytes: sizeOf(this.metricsPath), rolloutsBytes: sizeOf(this.rolloutsPath), ...(probesBytes > 0 ? { probesBytes } : {}) };
    for (const p of [this.metricsPath, this.rolloutsPath, this.probesPath]) if (existsSync(p)) fsyncPath(p);
    this.writeState(committed);
    faultPoint("after-state-commit", parts.step);
    this.collect(committed, parts.step);
    return committed;
  }

  /**
   * Brings the directory back to its committed state after a kill at any point: stale `*.tmp` files go, metrics.jsonl
   * is cut to the committed length (a line of an uncommitted step, or a torn one), and policy versions and checkpoints
   * the state does not keep are removed. With no state at all nothing was committed and the run starts afresh.
   */
  recover(): RunState | null {
    for (const e of readdirSync(this.root)) if (e.endsWith(".tmp")) rmSync(join(this.root, e), { force: true });
    // What a killed process was doing is not what this one will do.
    rmSync(join(this.root, PROGRESS_FILE), { force: true });
    const state = this.readState();
    if (!state) {
      for (const d of ["policy", "checkpoints", "evals"]) rmSync(join(this.root, d), { recursive: true, force: true });
      rmSync(this.metricsPath, { force: true });
      rmSync(this.rolloutsPath, { force: true });
      rmSync(this.probesPath, { force: true });
      return null;
    }
    if (state.metricsBytes !== undefined && sizeOf(this.metricsPath) > state.metricsBytes) truncateSync(this.metricsPath, state.metricsBytes);
    if (state.rolloutsBytes !== undefined && sizeOf(this.rolloutsPath) > state.rolloutsBytes) truncateSync(this.rolloutsPath, state.rolloutsBytes);
    // No probesBytes: nothing of probes.jsonl was committed (probes are off, or none committed yet).
    if (sizeOf(this.probesPath) > (state.probesBytes ?? 0)) truncateSync(this.probesPath, state.probesBytes ?? 0);
    this.collect(state, state.step);
    return state;
  }

  /** Deletes what `state` does not keep: other checkpoints, uncommitted and retired policy versions. */
  private collect(state: RunState, step: number): void {
    const checkpoints = join(this.root, "checkpoints");
    const kept = state.checkpoint ? basename(state.checkpoint) : null;
    let removedCheckpoint = false;
    if (existsSync(checkpoints)) {
      for (const e of readdirSync(checkpoints)) {
        if (e === kept) continue;
        rmSync(join(checkpoints, e), { recursive: true, force: true });
        removedCheckpoint = true;
      }
    }
    if (removedCheckpoint) faultPoint("during-cleanup", step);
    const policies = join(this.root, "policy");
    if (existsSync(policies)) {
      for (const e of readdirSync(policies)) {
        const v = /^v(\d+)$/.exec(e)?.[1];
        if (v === undefined || keepsPolicy(state, Number(v))) continue;
        rmSync(join(policies, e), { recursive: true, force: true });
      }
    }
  }
}

function sizeOf(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

/**
 * Policy versions a state keeps: the initial and warm-started ones (0, 1), the KL reference, the current one and the
 * one before it (async rollouts may still be sampling it). Newer ones are uncommitted.
 */
export function keepsPolicy(state: RunState, version: number): boolean {
  if (version > state.policyVersion) return false;
  return version <= 1 || version === state.referenceVersion || version >= state.policyVersion - 1;
}
