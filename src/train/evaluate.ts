import { Progress } from "../core/progress.js";
import { summarise, type EvalSummary } from "../eval/metrics.js";
import type { RolloutStack } from "../rollout/stack.js";
import { runRollouts } from "../rollout/runner.js";
import type { RunContext } from "../run/context.js";
import type { Task } from "../tasks/task.js";

/** Held-out evaluation through sandboxed harnesses with the policy the stack serves now. */
export async function evaluatePolicy(ctx: RunContext, stack: RolloutStack, tasks: readonly Task[], label: string): Promise<EvalSummary> {
  const config = ctx.config;
  const ev = config.eval;
  const harnesses = ev?.harnesses ?? config.harnesses;
  const samples = ev?.samples ?? 1;
  const progress = new Progress(label, tasks.length * harnesses.length * samples);
  const results = await runRollouts(
    stack,
    { tasks, harnesses, samples, idPrefix: label },
    {
      concurrency: config.rollout.concurrency,
      settings: ctx.rolloutSettings,
      onResult: (_r, done) => progress.update(done),
    },
  );
  return summarise(results, samples);
}
