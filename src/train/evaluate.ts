import { newId } from "../core/ids.js";
import { Progress } from "../core/progress.js";
import { EvalJournal } from "../eval/journal.js";
import { summarise, type EvalSummary } from "../eval/metrics.js";
import type { RolloutStack } from "../rollout/stack.js";
import { runRollouts } from "../rollout/runner.js";
import type { RunContext } from "../run/context.js";
import type { Task } from "../tasks/task.js";
import type { ClusterSteps } from "./cluster-launch.js";
import { faultPoint } from "./fault.js";

/** A run on a cluster evaluates on its rollout nodes, sampling this policy version. */
export interface ClusterEvaluation {
  steps: ClusterSteps;
  version: number;
  policyDir: string;
}

export interface EvaluateOptions {
  cluster?: ClusterEvaluation;
  /**
   * Where this evaluation journals its results, and the policy version it evaluates: a run killed mid-evaluation
   * resumes with the rollouts that finished (src/eval/journal.ts). Local evaluations only: a cluster's nodes
   * answer an evaluation as a whole.
   */
  journal?: { path: string; policy: string };
  log?: (line: string) => void;
}

/**
 * Held-out evaluation through sandboxed harnesses: with the policy the stack serves now, or as jobs on the cluster's
 * nodes (which run the same harnesses in their sandboxes against the same served engine).
 */
export async function evaluatePolicy(ctx: RunContext, stack: RolloutStack, tasks: readonly Task[], label: string, options: EvaluateOptions = {}): Promise<EvalSummary> {
  const config = ctx.config;
  const ev = config.eval;
  const harnesses = ev?.harnesses ?? config.harnesses;
  const samples = ev?.samples ?? 1;
  const total = tasks.length * harnesses.length * samples;
  const progress = new Progress(label, total);
  const plan = { tasks, harnesses, samples };
  if (options.cluster) {
    const { steps, version, policyDir } = options.cluster;
    return summarise(await steps.evaluate(plan, label, version, policyDir, (done) => progress.update(done)), samples);
  }
  if (!options.journal) {
    return summarise(await runRollouts(stack, { ...plan, idPrefix: label }, { concurrency: config.rollout.concurrency, settings: ctx.rolloutSettings, onResult: (_r, done) => progress.update(done) }), samples);
  }
  const { journal, opening } = EvalJournal.open(options.journal.path, { label, policy: options.journal.policy, taskIds: tasks.map((t) => t.id), harnesses, samples });
  if (opening.restarted) options.log?.(`${label}: not continuing ${journal.path}: ${opening.restarted}; evaluating from the start`);
  const kept = opening.kept;
  if (kept > 0) options.log?.(`${label}: resuming with ${kept} of ${total} rollouts already evaluated${opening.tornTail ? " (a last line cut by the kill dropped)" : ""}`);
  // After an earlier attempt (resumed, or another evaluation's file replaced), rollouts get ids of their own: the
  // records of rollouts a kill interrupted keep theirs and are not mixed in.
  const idPrefix = opening.resumed || opening.restarted ? `${label}-r${newId("a", 6).slice(2)}` : label;
  if (kept > 0) progress.update(kept);
  await runRollouts(stack, { ...plan, idPrefix }, {
    concurrency: config.rollout.concurrency,
    settings: ctx.rolloutSettings,
    skip: (request) => journal.has(request),
    onResult: (result) => {
      journal.append(result);
      progress.update(journal.done.length);
      faultPoint("during-eval", journal.done.length);
    },
  });
  return summarise(journal.done, samples);
}
