import { advantageMetrics, applyAdvantages, branchPoints, planGroups, toAdvantageConfig, type AdvantageConfig } from "../advantage/index.js";
import type { RolloutResult } from "../tasks/rollout-result.js";
import type { Store } from "../store/types.js";
import { requireCapability } from "../trainer/capabilities.js";
import type { CapoTrainer, ForwardBackwardOptions, OptimStepOptions, OptimStepResult, OptimizerReset, Trainer } from "../trainer/types.js";
import { batchForRollouts, batchFromRecords, recordsForRollouts } from "./batches.js";
import type { RunConfig } from "./config.js";
import { lrAt } from "./lr-schedule.js";
import { microBatches, splitMinibatches } from "./micro-batches.js";
import { untrainedRoleFilter } from "./train-roles.js";
import { UserError } from "../core/errors.js";

export type TrainStepMetrics = Record<string, number>;

export interface TrainStepResult {
  metrics: TrainStepMetrics;
  /** Mean |advantage| over the step's rollouts (HarnessBandit's learnability). */
  learnability: number;
  /** Sketch of the step's gradient, when asked for and a gradient existed. */
  sketch?: Float32Array;
}

/** The advantage estimator's config for a run: the validated `advantage:` section in the code's spelling. */
export function advantageConfigOf(config: RunConfig): AdvantageConfig {
  return toAdvantageConfig(config.advantage);
}

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
}

/**
 * One policy update from a set of finished rollouts: trees → packed batch → advantages (tree-GRPO, or PPO with GAE
 * along tree paths from the critic's values) → clipped policy-gradient loss with truncated importance sampling against
 * the engine's logprobs → one AdamW step per minibatch (`algorithm.minibatches`; and one critic step each for PPO). Calls sampled by a policy more than
 * `max_staleness` versions behind `currentVersion` are left out of the loss (async mode).
 */
export interface TrainStepOptions {
  sketch?: { dim: number; seed: number } | null;
  /** CAPO: whether partitions exist already, and whether to re-probe them this step. */
  capo?: { probe: boolean; hasPartitions: boolean } | null;
  /** The RL step (1-based): the learning-rate schedule's position; step 1 applies `algorithm.reset_optimizer`. */
  step?: number;
  /** The reference policy (the one RL started from), loaded in its own trainer, for `algorithm.kl_coef`. */
  reference?: Trainer | null;
}

/**
 * CAPO partitions come from successful trajectories: probe on this step's passing rollouts when there are any.
 * Returns whether partitions exist after the call.
 */
async function capoProbe(store: Store, results: readonly RolloutResult[], trainer: CapoTrainer, config: RunConfig, metrics: TrainStepMetrics, had: boolean): Promise<boolean> {
  const winners = results.filter((r) => r.status === "ok");
  if (winners.length === 0) {
    metrics["capo/probe_skipped"] = 1;
    return had;
  }
  const probe = await trainer.capoProbe(batchForRollouts(store, winners, { rowTokens: config.algorithm.row_tokens, trajectories: config.algorithm.trajectories }).batch, { topFraction: config.capo?.top_fraction ?? 0.25 });
  metrics["capo/units_per_layer"] = probe.unitsPerLayer;
  metrics["capo/overlap"] = probe.overlapFraction;
  metrics["capo/probed"] = 1;
  return true;
}

/**
 * `algorithm.reset_optimizer` for RL step `step`: the reset, on step 1 only (it then rides the step's first optimizer
 * step; a run resumed later continues from checkpoints that already hold the reset state), else null.
 */
export function optimizerResetFor(config: RunConfig, step: number | undefined): OptimizerReset | null {
  const reset = config.algorithm.reset_optimizer;
  return reset !== "none" && step === 1 ? reset : null;
}

/** A step's packed batch with its advantages applied, and the largest policy lag among its calls. */
export interface AdvantagedBatch {
  built: ReturnType<typeof batchForRollouts>;
  stats: ReturnType<typeof applyAdvantages>["stats"];
  maxLag: number;
}

/**
 * Trees → packed batch → advantages, exactly as a training step builds them (shared with the probe harnesses' gradient
 * sketches, which must be comparable with the training step's). `valid` must hold no infra errors.
 */
export async function advantagedBatch(store: Store, valid: readonly RolloutResult[], trainer: Trainer, config: RunConfig, currentVersion: number): Promise<AdvantagedBatch> {
  const advConfig = advantageConfigOf(config);
  const read = recordsForRollouts(store, valid);
  const built = batchFromRecords(read, valid, { rowTokens: config.algorithm.row_tokens, trajectories: config.algorithm.trajectories });
  let maxLag = 0;
  for (const call of built.index.calls) if (call.policyVersion !== null) maxLag = Math.max(maxLag, currentVersion - call.policyVersion);
  // Calls made by roles that are not trained (e.g. sub-agents in central-only training) leave the loss entirely.
  const untrainedRole = untrainedRoleFilter(store, valid.map((r) => r.rolloutId), config.train_roles);
  // The run checked these capabilities at its start (train/trainer-capabilities.ts); a direct caller learns here.
  const critic = advConfig.estimator === "ppo" ? requireCapability(trainer, "critic", 'advantage estimator "ppo"') : null;
  const values = critic ? await critic.criticValues(built.batch) : undefined;
  const plan = planGroups(valid, advConfig);
  const branches = advConfig.negativeScope === "branch" ? branchPoints(read.records, plan) : undefined;
  const { stats } = applyAdvantages({
    built,
    results: valid,
    config: advConfig,
    plan,
    ...(values ? { values } : {}),
    ...(branches ? { branches } : {}),
    excludeCall: (call) => untrainedRole?.(call) === true || (call.policyVersion !== null && currentVersion - call.policyVersion > config.max_staleness),
  });
  return { built, stats, maxLag };
}

/** The policy-gradient forwardBackward options of a step (the probe harnesses' sketches use the same loss). */
export function pgOptions(config: RunConfig, refLogprobs: Float32Array[] | null, proxLogprobs?: Float32Array[]): ForwardBackwardOptions {
  const alg = config.algorithm;
  return {
    objective: "pg",
    temperature: config.sampling.temperature,
    loss: { clipLow: alg.clip_low, clipHigh: alg.clip_high, isMode: alg.is_mode, tisCap: alg.tis_cap, entropyCoef: alg.entropy_coef, ...(refLogprobs ? { klCoef: alg.kl_coef } : {}) },
    ...(refLogprobs ? { refLogprobs } : {}),
    ...(proxLogprobs ? { proxLogprobs } : {}),
  };
}

export async function trainOnRollouts(store: Store, results: readonly RolloutResult[], trainer: Trainer, config: RunConfig, currentVersion: number, options: TrainStepOptions = {}): Promise<TrainStepResult> {
  const alg = config.algorithm;
  const valid = results.filter((r) => r.status !== "infra_error");
  if (valid.length === 0) return { metrics: { "train/skipped": 1 }, learnability: 0 };
  const ppo = advantageConfigOf(config).estimator === "ppo";
  const critic = ppo ? requireCapability(trainer, "critic", 'advantage estimator "ppo"') : null;
  const capoTrainer = options.capo ? requireCapability(trainer, "capo", "capo.enabled") : null;
  const sketcher = options.sketch ? requireCapability(trainer, "grad_sketch", "a scheduler that compares gradient sketches") : null;
  const { built, stats, maxLag } = await advantagedBatch(store, valid, trainer, config, currentVersion);
  const metrics: TrainStepMetrics = { ...advantageMetrics(stats), "staleness/max": maxLag };
  let capo = false;
  if (options.capo && capoTrainer) {
    const ready = options.capo.probe ? await capoProbe(store, valid, capoTrainer, config, metrics, options.capo.hasPartitions) : options.capo.hasPartitions;
    capo = ready;
    metrics["capo/active"] = ready ? 1 : 0;
  }
  const capoCos: number[] = [];
  const fbStats = { loss: 0, tokens: 0, mismatchMean: [] as number[], mismatchMax: 0, kl: [] as number[], refKl: [] as number[], clip: [] as number[], isLimited: [] as number[], entropy: [] as number[], peakRssMb: 0, cudaPeakMb: 0 };
  const reference = alg.kl_coef > 0 ? options.reference : null;
  if (alg.kl_coef > 0 && !reference) throw new UserError("invalid_config", "algorithm.kl_coef > 0 needs the reference policy's trainer");
  let valueLoss = 0;
  let sketch: Float32Array | undefined;
  let opt: OptimStepResult | null = null;
  const lr = lrAt(alg.lr, alg.lr_schedule, options.step ?? 1, config.budget.steps);
  metrics.lr = lr;
  const minibatches = splitMinibatches(built.batch, alg.minibatches).map((m) => [...microBatches(m, alg.batch_tokens)]);
  // Minibatches after the first are trained after the policy has moved: their PPO anchor (proxLogprobs) is the policy
  // that sampled the batch, scored before any update, so the clip bounds the whole step as a trust region.
  // Anchors and reference logprobs are read at trainable tokens only: prompts need no output projection.
  const scoring = { temperature: config.sampling.temperature, entropy: false, trainableOnly: true };
  const prox: Float32Array[][][] = [];
  for (const micro of minibatches.slice(1)) {
    const scored: Float32Array[][] = [];
    for (const mb of micro) scored.push((await trainer.logprobs(mb, scoring)).logprobs);
    prox.push(scored);
  }
  const gradNorms: number[] = [];
  const criticGradNorms: number[] = [];
  for (const [k, micro] of minibatches.entries()) {
    for (const [j, mb] of micro.entries()) {
      // KL to the reference is scored on exactly the tokens of this micro-batch, by the reference's own weights.
      const ref = reference ? await reference.logprobs(mb, scoring) : null;
      const anchor = k > 0 ? prox[k - 1]?.[j] : undefined;
      const fbOptions = pgOptions(config, ref ? ref.logprobs : null, anchor);
      const fb = capo && capoTrainer ? await capoTrainer.forwardBackward(mb, { ...fbOptions, capo: true }) : await trainer.forwardBackward(mb, fbOptions);
      if (ref) fbStats.refKl.push(fb.refKlMean);
      if (fb.capoGradCosine !== undefined) capoCos.push(fb.capoGradCosine);
      fbStats.loss += fb.loss / minibatches.length;
      fbStats.tokens += fb.trainableTokens;
      // Engine/trainer mismatch is only meaningful before this step's first update moves the policy.
      if (k === 0) {
        fbStats.mismatchMean.push(fb.mismatchAbsMean);
        fbStats.mismatchMax = Math.max(fbStats.mismatchMax, fb.mismatchAbsMax);
      }
      fbStats.kl.push(fb.klK3Mean);
      fbStats.clip.push(fb.clipFraction);
      fbStats.isLimited.push(fb.isLimitedFraction);
      fbStats.entropy.push(fb.entropyMean);
      if (fb.peakRssMb !== undefined) fbStats.peakRssMb = Math.max(fbStats.peakRssMb, fb.peakRssMb);
      if (fb.cudaPeakMb !== undefined) fbStats.cudaPeakMb = Math.max(fbStats.cudaPeakMb, fb.cudaPeakMb);
      if (critic) valueLoss += (await critic.criticForwardBackward(mb)).valueLoss;
    }
    // The sketch must see the accumulated gradient, so it is taken before the optimizer step clears it (with several
    // minibatches: the first one's, i.e. the gradient at the policy that sampled the batch).
    if (k === 0 && options.sketch && sketcher && stats.tokenMeanAbsAdvantage > 0) sketch = (await sketcher.gradSketch(options.sketch)).sketch;
    const reset = k === 0 ? optimizerResetFor(config, options.step) : null;
    const adamw: OptimStepOptions = { lr, weightDecay: alg.weight_decay, beta1: alg.betas[0], beta2: alg.betas[1], maxGradNorm: alg.max_grad_norm, ...(reset ? { reset } : {}) };
    opt = capo && capoTrainer ? await capoTrainer.optimStep({ ...adamw, capo: true }) : await trainer.optimStep(adamw);
    if (opt.gradNorm !== null) gradNorms.push(opt.gradNorm);
    // How many parameters' AdamW state the reset found (0: the optimizer was fresh, e.g. no warm start).
    if (reset) metrics["train/optimizer_reset_params"] = opt.resetParameters ?? 0;
    if (critic) {
      const criticOpt = await critic.criticOptimStep({ lr: alg.critic_lr, maxGradNorm: alg.critic_max_grad_norm ?? alg.max_grad_norm });
      if (criticOpt.gradNorm !== null) criticGradNorms.push(criticOpt.gradNorm);
    }
  }
  if (ppo) metrics["critic/value_loss"] = valueLoss;
  // The critic's gradient norm before its clip: the scale `critic_max_grad_norm` acts on.
  if (criticGradNorms.length) metrics["critic/grad_norm"] = mean(criticGradNorms);
  metrics["train/minibatches"] = minibatches.length;
  if (capoCos.length) metrics["capo/grad_cosine"] = mean(capoCos);
  Object.assign(metrics, {
    loss: fbStats.loss,
    "mismatch/mean_abs": mean(fbStats.mismatchMean),
    "mismatch/max_abs": fbStats.mismatchMax,
    "kl/k3": mean(fbStats.kl),
    ...(fbStats.refKl.length ? { "kl/ref": mean(fbStats.refKl) } : {}),
    clip_frac: mean(fbStats.clip),
    is_limited_frac: mean(fbStats.isLimited),
    entropy: mean(fbStats.entropy),
    // The largest pre-clip norm of the step's minibatches (the one the clip acts on first), and the first's: the
    // gradient at the policy that sampled the batch.
    grad_norm: gradNorms.length ? Math.max(...gradNorms) : 0,
    ...(gradNorms.length > 1 ? { "grad_norm/first": gradNorms[0] } : {}),
    "train/skipped": opt?.skipped ? 1 : 0,
    "tokens/trainable": fbStats.tokens,
    "tokens/unique": built.stats.uniqueTokens,
    "tokens/flat": built.stats.flatTokens,
    "tokens/emitted": built.stats.emittedTokens,
    dedup_ratio: built.stats.dedupRatio,
    // `trajectories: main`: the calls recorded but left out (side conversations, sub-agents, compactions).
    ...(alg.trajectories === "main" ? { "calls/auxiliary_dropped": built.stats.filter.auxiliaryCalls } : {}),
    // The trainer's peak memory over this step's forward/backward calls (0 when the trainer does not report it).
    "memory/peak_rss_mb": fbStats.peakRssMb,
    ...(fbStats.cudaPeakMb > 0 ? { "memory/cuda_peak_mb": fbStats.cudaPeakMb } : {}),
  });
  return { metrics, learnability: stats.meanAbsAdvantage, ...(sketch ? { sketch } : {}) };
}
