import type { HarnessScheduler, ProbePlan } from "../schedule/types.js";
import type { RolloutResult } from "../tasks/rollout-result.js";
import type { Store } from "../store/types.js";
import { requireCapability } from "../trainer/capabilities.js";
import type { Trainer } from "../trainer/types.js";
import type { RunConfig } from "./config.js";
import { microBatches } from "./micro-batches.js";
import { advantagedBatch, pgOptions } from "./rl-step.js";

/** One probe harness's rollouts of a step, turned into a gradient sketch that is never applied. */
export interface ProbeSketch {
  /** Absent when the probe had no gradient: no valid rollout, or every advantage zero (a zero-variance group). */
  sketch?: Float32Array;
  /** Flat numbers for metrics.jsonl under `probe/…/<harness>`. */
  metrics: Record<string, number>;
}

/**
 * The gradient a training step on `results` (one probe harness's rollouts) would take, sketched and then dropped:
 * the same trees, advantages and policy-gradient loss as trainOnRollouts (so the sketch is comparable with the training
 * step's), forwardBackward over the whole batch, gradSketch, and zeroGrad — never optimStep. Gradients are cleared
 * before (none should be pending between steps) and always after, even when a call fails, so nothing of the probe can
 * reach the next optimizer step. Run it before the step's training forwardBackward: both then see the same weights.
 * CAPO routing is not applied to probes (their sketch is the plain policy gradient).
 */
export async function probeSketch(store: Store, harness: string, results: readonly RolloutResult[], trainer: Trainer, config: RunConfig, currentVersion: number, options: { sketch: { dim: number; seed: number }; reference?: Trainer | null }): Promise<ProbeSketch> {
  const sketcher = requireCapability(trainer, "grad_sketch", "probe harnesses");
  const valid = results.filter((r) => r.status !== "infra_error");
  const metrics: Record<string, number> = {
    [`probe/rollouts/${harness}`]: results.length,
    [`probe/reward/${harness}`]: valid.length ? valid.reduce((s, r) => s + r.score, 0) / valid.length : 0,
    [`probe/pass1/${harness}`]: valid.length ? valid.filter((r) => r.status === "ok").length / valid.length : 0,
  };
  if (valid.length === 0) return { metrics: { ...metrics, [`probe/skipped/${harness}`]: 1 } };
  const { built, stats } = await advantagedBatch(store, valid, trainer, config, currentVersion);
  metrics[`probe/adv_mean_abs/${harness}`] = stats.meanAbsAdvantage;
  if (!(stats.tokenMeanAbsAdvantage > 0)) return { metrics: { ...metrics, [`probe/skipped/${harness}`]: 1 } };
  const reference = config.algorithm.kl_coef > 0 ? (options.reference ?? null) : null;
  const scoring = { temperature: config.sampling.temperature, entropy: false, trainableOnly: true };
  let tokens = 0;
  let sketch: Float32Array;
  let gradNorm: number;
  await trainer.zeroGrad();
  try {
    for (const mb of microBatches(built.batch, config.algorithm.batch_tokens)) {
      const ref = reference ? await reference.logprobs(mb, scoring) : null;
      tokens += (await trainer.forwardBackward(mb, pgOptions(config, ref ? ref.logprobs : null))).trainableTokens;
    }
    ({ sketch, gradNorm } = await sketcher.gradSketch(options.sketch));
  } finally {
    await trainer.zeroGrad();
  }
  Object.assign(metrics, { [`probe/skipped/${harness}`]: 0, [`probe/tokens/${harness}`]: tokens, [`probe/grad_norm/${harness}`]: gradNorm });
  return { sketch, metrics };
}

/**
 * A probe step: every probe harness's rollouts of the step sketched ({@link probeSketch}) and handed to the scheduler,
 * before the step's training accumulates its own gradient. Returns the step's `probe/…` and timing metrics.
 */
export async function probeStep(scheduler: HarnessScheduler, plan: ProbePlan, store: Store, results: readonly RolloutResult[], trainer: Trainer, config: RunConfig, currentVersion: number, options: { sketch: { dim: number; seed: number }; reference?: Trainer | null; rolloutSeconds: number }): Promise<Record<string, number>> {
  const t0 = Date.now();
  const metrics: Record<string, number> = {};
  for (const p of plan.harnesses) {
    const probe = await probeSketch(store, p, results.filter((r) => r.harness === p), trainer, config, currentVersion, options);
    scheduler.updateProbe({ harness: p, ...(probe.sketch ? { sketch: probe.sketch } : {}) });
    Object.assign(metrics, probe.metrics);
  }
  const valid = results.filter((r) => r.status !== "infra_error");
  return Object.assign(metrics, {
    "probe/rollouts": results.length,
    "probe/reward": valid.length ? valid.reduce((sum, r) => sum + r.score, 0) / valid.length : 0,
    "time/probe_rollout_s": options.rolloutSeconds,
    "time/probe_sketch_s": (Date.now() - t0) / 1000,
  });
}
