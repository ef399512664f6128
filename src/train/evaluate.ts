import { Progress } from "../core/progress.js";
import { summarise, type EvalSummary } from "../eval/metrics.js";
import type { RolloutStack } from "../rollout/stack.js";
import { runRollouts } from "../rollout/runner.js";
import type { RunContext } from "../run/context.js";
import type { Task } from "../tasks/task.js";
import type { ClusterSteps } from "./cluster-launch.js";

/** A run on a cluster evaluates on its rollout nodes, sampling this policy version. */
export interface ClusterEvaluation {
  steps: ClusterSteps;
  version: number;
  policyDir: string;
}

/**
 * Held-out evaluation through sandboxed harnesses: with the policy the stack serves now, or as jobs on the cluster's
 * nodes (which run the same harnesses in their sandboxes against the same served engine).
 */
export async function evaluatePolicy(ctx: RunContext, stack: RolloutStack, tasks: readonly Task[], label: string, cluster?: ClusterEvaluation): Promise<EvalSummary> {
  const config = ctx.config;
  const ev = config.eval;
  const harnesses = ev?.harnesses ?? config.harnesses;
  const samples = ev?.samples ?? 1;
  const progress = new Progress(label, tasks.length * harnesses.length * samples);
  const plan = { tasks, harnesses, samples };
  const results = cluster
    ? await cluster.steps.evaluate(plan, label, cluster.version, cluster.policyDir, (done) => progress.update(done))
    : await runRollouts(stack, { ...plan, idPrefix: label }, { concurrency: config.rollout.concurrency, settings: ctx.rolloutSettings, onResult: (_r, done) => progress.update(done) });
  return summarise(results, samples);
}
