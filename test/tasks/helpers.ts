import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyStepsLocally, seedWorkspace, verifyLocally } from "../../src/tasks/index.js";
import type { StepOutcome } from "../../src/tasks/local-run.js";
import type { OracleStep, Task } from "../../src/tasks/task.js";
import type { VerifierResult } from "../../src/tasks/verifier-result.js";

export interface Attempt {
  steps: StepOutcome[];
  result: VerifierResult;
}

/** Seeds a fresh temp workspace, applies `steps` for real (sh -c / file writes), runs the verifier process. */
export async function attempt(task: Task, steps: OracleStep[]): Promise<Attempt> {
  const ws = await mkdtemp(join(tmpdir(), "hrl-task-"));
  try {
    await seedWorkspace(task, ws);
    const outcomes = await applyStepsLocally(steps, ws);
    const { process: _p, ...result } = await verifyLocally(task, ws);
    return { steps: outcomes, result };
  } finally {
    await rm(ws, { recursive: true, force: true });
  }
}

export function oracleSteps(task: Task): OracleStep[] {
  const steps = task.metadata.oracle?.steps;
  if (!steps) throw new Error(`task ${task.id} has no oracle`);
  return steps;
}

/** Maps with bounded concurrency (2 cores shared by many agents). */
export async function mapPool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  async function worker(): Promise<void> {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i] as T);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

export function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}
