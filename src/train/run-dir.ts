import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

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
}

/** The layout of a run directory and its small persistent files. Writes are atomic (write + rename). */
export class RunDir {
  constructor(readonly root: string) {
    mkdirSync(root, { recursive: true });
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
  get storeSpec(): string {
    return `sqlite:${join(this.root, "records.sqlite")}`;
  }
  get demoStoreSpec(): string {
    return `sqlite:${join(this.root, "demos.sqlite")}`;
  }
  policyDir(version: number): string {
    return join(this.root, "policy", `v${String(version).padStart(4, "0")}`);
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

  writeState(state: RunState): void {
    this.writeJson("state.json", state);
  }

  writeJson(name: string, value: unknown): void {
    const p = join(this.root, name);
    writeFileSync(`${p}.tmp`, `${JSON.stringify(value, null, 2)}\n`);
    renameSync(`${p}.tmp`, p);
  }

  appendMetrics(row: Record<string, unknown>): void {
    appendFileSync(this.metricsPath, `${JSON.stringify(row)}\n`);
  }
}
