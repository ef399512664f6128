import { appendFileSync } from "node:fs";
import { getHarness } from "../harness/registry.js";
import type { HarnessDefinition } from "../harness/types.js";
import type { Task } from "../tasks/task.js";
import { runPool } from "./pool.js";
import { DEFAULT_ROLLOUT_SETTINGS, runRollout, type RolloutSettings } from "./run-one.js";
import type { RolloutStack } from "./stack.js";
import type { RolloutRequest, RolloutResult } from "../tasks/rollout-result.js";

export interface RolloutPlan {
  tasks: readonly Task[];
  harnesses: readonly string[];
  samples: number;
  /** Prefix for rollout ids (e.g. the step); ids are `<prefix>-<task>-<harness>-<sample>`. */
  idPrefix: string;
  /**
   * Common random numbers (an evaluation's, or a seeded training step's): each rollout's sampling seeds derive from
   * this key and its (task, harness, sample), the same in every plan with the key (RolloutSettings.samplingSeeds).
   * Absent: random seeds.
   */
  samplingSeeds?: string;
}

export interface RunOptions {
  concurrency: number;
  settings?: Partial<RolloutSettings>;
  /** Appends each result as a JSON line as soon as it finishes (crash-safe progress). */
  resultsFile?: string;
  onResult?: (result: RolloutResult, done: number, total: number) => void;
  /** An attempt of a rollout ended in a retryable infrastructure error and the rollout runs again. */
  onRetry?: (failed: RolloutResult, attempt: number, attempts: number) => void;
  /** Requests of the plan not to run (they have results already: a resumed evaluation); `total` counts the rest. */
  skip?: (request: RolloutRequest) => boolean;
}

/** The log line for a rollout attempt that ended in a retryable infrastructure error. */
export function retryLine(failed: RolloutResult, attempt: number, attempts: number): string {
  return `rollout ${failed.rolloutId}: attempt ${attempt} of ${attempts} ended in an infrastructure error, running it again: ${(failed.error ?? "").slice(0, 300)}`;
}

/** The task × harness × sample requests of a plan, in a stable order. */
export function expandPlan(plan: RolloutPlan): { request: RolloutRequest; task: Task }[] {
  const out: { request: RolloutRequest; task: Task }[] = [];
  for (const task of plan.tasks) {
    for (const harness of plan.harnesses) {
      for (let sample = 0; sample < plan.samples; sample++) {
        out.push({ request: { rolloutId: `${plan.idPrefix}-${task.id}-${harness}-${sample}`, taskId: task.id, harness, sample }, task });
      }
    }
  }
  return out;
}

/** Runs every rollout of a plan concurrently in a bounded pool through the stack's proxy and sandboxes. */
export async function runRollouts(stack: RolloutStack, plan: RolloutPlan, options: RunOptions): Promise<RolloutResult[]> {
  const settings: RolloutSettings = { ...DEFAULT_ROLLOUT_SETTINGS, ...options.settings, ...(plan.samplingSeeds === undefined ? {} : { samplingSeeds: plan.samplingSeeds }) };
  const defs = new Map<string, HarnessDefinition>();
  for (const name of plan.harnesses) {
    const def = getHarness(name);
    await def.ensureInstalled();
    defs.set(name, def);
  }
  const items = expandPlan(plan).filter(({ request }) => !options.skip?.(request));
  for (const { request, task } of items) stack.assign(request.rolloutId, task);
  return runPool(
    items,
    options.concurrency,
    ({ request, task }) => runRollout(request, task, defs.get(request.harness)!, stack.backend, stack.rolloutProxy, settings, (failed, attempt) => options.onRetry?.(failed, attempt, settings.attempts)),
    (result, done) => {
      if (options.resultsFile) appendFileSync(options.resultsFile, `${JSON.stringify(result)}\n`);
      options.onResult?.(result, done, items.length);
    },
  );
}
