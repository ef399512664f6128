import { defaultCodec } from "../chat/codec.js";
import { Progress } from "../core/progress.js";
import { RolloutStack } from "../rollout/stack.js";
import { runRollouts } from "../rollout/runner.js";
import { loadSuite } from "../tasks/registry.js";
import type { Trainer } from "../trainer/types.js";
import { batchForRollouts } from "./batches.js";
import type { RunConfig } from "./config.js";
import { microBatches, setTokenMeanWeights } from "./micro-batches.js";
import type { RunDir } from "./run-dir.js";
import { rolloutSettings } from "./settings.js";

export interface WarmStartReport {
  demos: number;
  demoRollouts: number;
  trainableTokens: number;
  steps: number;
  finalNll: number;
  wallMs: number;
}

/**
 * Supervised warm start on oracle demonstrations: the oracle solves the demo tasks through every training harness in
 * real sandboxes, its calls are recorded exactly like sampled ones, and the same tree batches train the policy with
 * the SFT objective (weighted NLL of the sampled tokens).
 */
export async function warmStart(config: RunConfig, run: RunDir, trainer: Trainer, log: (line: string) => void): Promise<WarmStartReport> {
  const ws = config.warm_start;
  if (!ws) throw new Error("warmStart called without a warm_start section");
  const started = Date.now();
  const tasks = (await loadSuite(ws.demos)).tasks;
  const stack = await RolloutStack.open({ engine: "oracle", store: run.demoStoreSpec, sandbox: config.rollout.sandbox });
  let built;
  try {
    const progress = new Progress("demos", tasks.length * config.harnesses.length);
    const results = await runRollouts(
      stack,
      { tasks, harnesses: config.harnesses, samples: 1, idPrefix: "demo" },
      {
        concurrency: config.rollout.concurrency,
        // Demonstrations are not limited by the policy's sampling budget: the oracle's turns are what they are.
        settings: rolloutSettings(config, { maxTurns: config.rollout.max_turns + 2, maxTokens: 1024 }),
        onResult: (_r, done) => progress.update(done),
      },
    );
    const good = results.filter((r) => r.status === "ok");
    log(`warm start: ${good.length}/${results.length} oracle demonstrations solved their task`);
    built = batchForRollouts(stack.store, good, defaultCodec().tokenizer);
  } finally {
    await stack.close().catch(() => undefined);
  }
  const rows = built.batch.rows;
  let steps = 0;
  let nll = Number.NaN;
  const progress = new Progress("sft", ws.epochs);
  for (let epoch = 0; epoch < ws.epochs; epoch++) {
    // A fixed rotation per epoch instead of a shuffle keeps runs reproducible without extra state.
    const order = rows.map((_, i) => (i + epoch * 7) % rows.length);
    const shuffled = { ...built.batch, rows: order.map((i) => rows[i]!) };
    for (const mb of microBatches(shuffled, ws.batch_tokens)) {
      setTokenMeanWeights(mb);
      const fb = await trainer.forwardBackward(mb, { objective: "sft" });
      await trainer.optimStep({ lr: ws.lr, maxGradNorm: 1 });
      nll = fb.nllMean;
      steps++;
    }
    progress.update(epoch + 1, `nll ${nll.toFixed(3)}`);
  }
  return { demos: tasks.length, demoRollouts: built.stats.rollouts, trainableTokens: built.stats.trainableTokens, steps, finalNll: nll, wallMs: Date.now() - started };
}
