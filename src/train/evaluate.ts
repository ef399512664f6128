import { Progress } from "../core/progress.js";
import { summarise, type EvalSummary } from "../eval/metrics.js";
import type { RolloutStack } from "../rollout/stack.js";
import type { RunContext } from "../run/context.js";
import type { Task } from "../tasks/task.js";
import type { ClusterSteps } from "./cluster-launch.js";
import { runJournaled } from "./journaled-run.js";
import { retryLine } from "../rollout/runner.js";
import { evalSeedKey } from "./seed-keys.js";

/** A run on a cluster evaluates on its rollout nodes, sampling this policy version. */
export interface ClusterEvaluation {
  steps: ClusterSteps;
  version: number;
  policyDir: string;
}

/**
 * Where an evaluation runs: on the cluster's nodes (which answer it as a whole), or here with a journal of its
 * results and the policy version it evaluates, so that a run killed mid-evaluation resumes with the rollouts that
 * finished (src/eval/journal.ts).
 */
export type EvaluateOptions = { cluster: ClusterEvaluation } | { journal: { path: string; policy: string }; log: (line: string) => void };

/**
 * Held-out evaluation through sandboxed harnesses: with the policy the stack serves now, or as jobs on the cluster's
 * nodes (which run the same harnesses in their sandboxes against the same served engine).
 */
export async function evaluatePolicy(ctx: RunContext, stack: RolloutStack, tasks: readonly Task[], label: string, options: EvaluateOptions): Promise<EvalSummary> {
  const config = ctx.config;
  const ev = config.eval;
  const harnesses = ev?.harnesses ?? config.harnesses;
  const samples = ev?.samples ?? 1;
  const total = tasks.length * harnesses.length * samples;
  const progress = new Progress(label, total, { sink: ctx.run.progress });
  // The run's seed keys the random numbers: every evaluation of this run shares them, other seeds' runs do not.
  const plan = { tasks, harnesses, samples, ...(ev?.common_random_numbers === false ? {} : { samplingSeeds: evalSeedKey(config.seed) }) };
  if ("cluster" in options) {
    const { steps, version, policyDir } = options.cluster;
    return keyed(summarise(await steps.evaluate(plan, label, version, policyDir, (done) => progress.update(done)), samples), plan.samplingSeeds);
  }
  const { log } = options;
  const results = await runJournaled(stack, plan, {
    path: options.journal.path,
    label,
    policy: options.journal.policy,
    concurrency: config.rollout.concurrency,
    settings: ctx.rolloutSettings,
    onOpened: (journal, opening) => {
      if (opening.restarted) log(`${label}: not continuing ${journal.path}: ${opening.restarted}; evaluating from the start`);
      if (opening.kept > 0) {
        log(`${label}: resuming with ${opening.kept} of ${total} rollouts already evaluated${opening.tornTail ? " (a last line cut by the kill dropped)" : ""}`);
        progress.update(opening.kept);
      }
    },
    onResult: (_result, done) => progress.update(done),
    onRetry: (failed, attempt, attempts) => log(retryLine(failed, attempt, attempts)),
  });
  return keyed(summarise(results, samples), plan.samplingSeeds);
}

/** The summary says which random numbers its rollouts drew, so a later comparison knows whether they were common. */
function keyed(summary: EvalSummary, samplingSeeds: string | undefined): EvalSummary {
  return samplingSeeds === undefined ? summary : { ...summary, samplingSeeds };
}
