/**
 * The quickstart's recipe shrunk to what a test can run, as `--set` values: 2 demonstration tasks, 1 SFT epoch, 1 RL
 * step of 4 rollouts (no KL reference worker to start) and `evalTasks` held-out tasks per harness. Shared by the
 * tests of the experiment scripts (experiments/quickstart-seeds/) that run real quickstarts at CI size.
 */
export function tinyQuickstartSets(evalTasks: number): string[] {
  return [
    "warm_start.demos=calcrun:train?n=2&seed=2",
    "warm_start.epochs=1",
    "warm_start.stop_at_nll=null",
    "budget.steps=1",
    "budget.tasks_per_step=1",
    "budget.samples=2",
    `eval.tasks=calcrun:test?n=${evalTasks}&seed=3`,
    "algorithm.kl_coef=0",
    "engine.sequences=4",
    "rollout.concurrency=4",
    "sampling.max_tokens=24",
  ];
}
