import { newId } from "../core/ids.js";
import { EvalJournal, type JournalOpening } from "../eval/journal.js";
import type { RolloutSettings } from "../rollout/run-one.js";
import { runRollouts, type RolloutPlan } from "../rollout/runner.js";
import type { RolloutStack } from "../rollout/stack.js";
import type { RolloutResult } from "../tasks/rollout-result.js";
import { faultPoint } from "./fault.js";

export interface JournaledRunOptions {
  /** The journal file and what it records (src/eval/journal.ts): `label` also prefixes the rollout ids. */
  path: string;
  label: string;
  policy: string;
  concurrency: number;
  settings?: Partial<RolloutSettings>;
  /** Once the journal is open, before anything runs: what an earlier attempt left (for the caller's log). */
  onOpened?: (journal: EvalJournal, opening: JournalOpening) => void;
  /** A rollout's attempt ended in a retryable infrastructure error and it runs again (runRollouts). */
  onRetry?: (failed: RolloutResult, attempt: number, attempts: number) => void;
  /** After each new result is journaled; `done` counts the kept ones too. */
  onResult?: (result: RolloutResult, done: number) => void;
}

/**
 * Runs a plan's rollouts with a journal: results an earlier attempt journaled are kept, only the missing rollouts
 * run, each result is journaled as it finishes. A run's evaluations and the `eval` / `rollout` commands share it.
 * Returns every result (kept first, then new ones in the order they finished).
 */
export async function runJournaled(stack: RolloutStack, plan: Omit<RolloutPlan, "idPrefix">, o: JournaledRunOptions): Promise<readonly RolloutResult[]> {
  const { journal, opening } = EvalJournal.open(o.path, { label: o.label, policy: o.policy, taskIds: plan.tasks.map((t) => t.id), harnesses: plan.harnesses, samples: plan.samples, ...(plan.samplingSeeds === undefined ? {} : { samplingSeeds: plan.samplingSeeds }) });
  o.onOpened?.(journal, opening);
  // After an earlier attempt (resumed, or another evaluation's file replaced), rollouts get ids of their own: the
  // records of rollouts a kill interrupted keep theirs and are not mixed in.
  const idPrefix = opening.resumed || opening.restarted ? `${o.label}-r${newId("a", 6).slice(2)}` : o.label;
  await runRollouts(stack, { ...plan, idPrefix }, {
    concurrency: o.concurrency,
    ...(o.settings ? { settings: o.settings } : {}),
    skip: (request) => journal.has(request),
    ...(o.onRetry ? { onRetry: o.onRetry } : {}),
    onResult: (result) => {
      journal.append(result);
      o.onResult?.(result, journal.done.length);
      faultPoint("during-eval", journal.done.length);
    },
  });
  return journal.done;
}
