import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { applyStepsLocally, verifyLocally } from "./local-run.js";
import { seedWorkspace } from "./materialize.js";
import type { OracleStep, Task } from "./task.js";
import type { VerifierResult } from "./verifier-result.js";

/** One task checked locally: the oracle's score (when it has one) and the do-nothing score. */
export interface TaskCheck {
  id: string;
  oracle?: VerifierResult & { failedSteps: number };
  empty: VerifierResult;
}

async function scoreSteps(task: Task, steps: OracleStep[]): Promise<VerifierResult & { failedSteps: number }> {
  const ws = await mkdtemp(join(tmpdir(), "harnessrl-check-"));
  try {
    await seedWorkspace(task, ws);
    const outcomes = await applyStepsLocally(steps, ws);
    const { process: _proc, ...result } = await verifyLocally(task, ws);
    return { ...result, failedSteps: outcomes.filter((o) => !o.ok).length };
  } finally {
    await rm(ws, { recursive: true, force: true });
  }
}

/**
 * Sanity-checks a suite's verifiers without a sandbox (trusted suites only): the oracle should score 1 and doing
 * nothing should score 0. Runs `concurrency` tasks at a time.
 */
export async function checkTasks(tasks: Task[], concurrency = 2, onDone?: (c: TaskCheck) => void): Promise<TaskCheck[]> {
  const out: TaskCheck[] = new Array<TaskCheck>(tasks.length);
  let next = 0;
  async function worker(): Promise<void> {
    while (next < tasks.length) {
      const i = next++;
      const task = tasks[i]!;
      const check: TaskCheck = { id: task.id, empty: await scoreSteps(task, []) };
      if (task.metadata.oracle) check.oracle = await scoreSteps(task, task.metadata.oracle.steps);
      out[i] = check;
      onDone?.(check);
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, tasks.length)) }, worker));
  return out;
}
