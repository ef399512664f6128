import { fillAdvantages } from "../batch/advantage-slots.js";
import type { RolloutResult } from "../rollout/types.js";
import type { Tokenizer } from "../tokenizer/types.js";
import type { Trainer } from "../trainer/types.js";
import type { Store } from "../store/types.js";
import { batchForRollouts } from "./batches.js";
import type { RunConfig } from "./config.js";
import { grpoAdvantages } from "./grpo-basic.js";
import { microBatches, setTokenMeanWeights } from "./micro-batches.js";

export interface TrainStepMetrics {
  [key: string]: number;
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/**
 * One policy update from a set of finished rollouts: trees → packed batch → GRPO advantages → clipped policy-gradient
 * loss with truncated importance sampling against the engine's logprobs → one AdamW step. Rollouts sampled by a policy
 * more than `maxStaleness` versions behind `currentVersion` are dropped (async mode).
 */
export async function trainOnRollouts(store: Store, results: readonly RolloutResult[], tokenizer: Tokenizer, trainer: Trainer, config: RunConfig, currentVersion: number): Promise<TrainStepMetrics> {
  const alg = config.algorithm;
  const adv = grpoAdvantages(results, { stdNormalize: alg.std_normalize });
  const useful = results.filter((r) => (adv.byRollout.get(r.rolloutId) ?? 0) !== 0);
  const metrics: TrainStepMetrics = {
    "adv/groups": adv.groups,
    "adv/zero_variance_groups": adv.zeroVarianceGroups,
    "adv/excluded_infra": adv.excluded,
    "adv/mean_abs": mean([...adv.byRollout.values()].map(Math.abs)),
  };
  if (useful.length === 0) {
    metrics["train/skipped"] = 1;
    return metrics;
  }
  const built = batchForRollouts(store, useful, tokenizer);
  let stale = 0;
  let maxLag = 0;
  for (const call of built.index.calls) {
    const lag = call.policyVersion === null ? 0 : currentVersion - call.policyVersion;
    maxLag = Math.max(maxLag, lag);
  }
  fillAdvantages(built, (slot) => {
    const lag = slot.call.policyVersion === null ? 0 : currentVersion - slot.call.policyVersion;
    if (lag > config.max_staleness) {
      stale++;
      return 0;
    }
    return adv.byRollout.get(slot.call.rolloutId) ?? 0;
  });
  setTokenMeanWeights(built.batch);
  const stats = { loss: 0, mismatchMean: [] as number[], mismatchMax: 0, kl: [] as number[], clip: [] as number[], isLimited: [] as number[], entropy: [] as number[], tokens: 0 };
  for (const mb of microBatches(built.batch, alg.batch_tokens)) {
    const fb = await trainer.forwardBackward(mb, {
      objective: "pg",
      temperature: config.sampling.temperature,
      loss: { clipLow: alg.clip_low, clipHigh: alg.clip_high, isMode: alg.is_mode, tisCap: alg.tis_cap, entropyCoef: alg.entropy_coef, klCoef: 0 },
    });
    stats.loss += fb.loss;
    stats.tokens += fb.trainableTokens;
    stats.mismatchMean.push(fb.mismatchAbsMean);
    stats.mismatchMax = Math.max(stats.mismatchMax, fb.mismatchAbsMax);
    stats.kl.push(fb.klK3Mean);
    stats.clip.push(fb.clipFraction);
    stats.isLimited.push(fb.isLimitedFraction);
    stats.entropy.push(fb.entropyMean);
  }
  const opt = await trainer.optimStep({ lr: alg.lr, weightDecay: alg.weight_decay, maxGradNorm: alg.max_grad_norm });
  Object.assign(metrics, {
    loss: stats.loss,
    "mismatch/mean_abs": mean(stats.mismatchMean),
    "mismatch/max_abs": stats.mismatchMax,
    "kl/k3": mean(stats.kl),
    clip_frac: mean(stats.clip),
    is_limited_frac: mean(stats.isLimited),
    entropy: mean(stats.entropy),
    grad_norm: opt.gradNorm ?? 0,
    "train/skipped": opt.skipped ? 1 : 0,
    "tokens/trainable": stats.tokens,
    "tokens/unique": built.stats.uniqueTokens,
    "tokens/flat": built.stats.flatTokens,
    dedup_ratio: built.stats.dedupRatio,
    "staleness/max": maxLag,
    "staleness/dropped_tokens": stale,
  });
  return metrics;
}
