import { z } from "zod";
import { UserError } from "../core/errors.js";

/**
 * The `scheduler:` section of the run config (scheduled mix-harness mode). snake_case like the rest of the YAML; unknown
 * keys are errors. Every HarnessBandit constant lives here with its default (docs/harness-bandit.md explains each).
 */
export const BANDIT_DEFAULTS = {
  /** Pooled sliding window: the last W observations (all harnesses together) define min/max for normalisation. */
  window: 32,
  /** Gradient sketch size and projection seed (passed to trainer.gradSketch; constant for a run). */
  sketch_dim: 1024,
  sketch_seed: 0,
  /** EMA of each harness's unit-length sketch: e ← d·e + (1 − d)·ŝ. */
  sketch_decay: 0.7,
  /** EMA of each harness's fused score: s ← d·s + (1 − d)·f (0 = latest fused value only). */
  score_decay: 0.5,
  /** Fusion f = learn_weight·ℓ̂ + transfer_weight·τ̂. */
  learn_weight: 0.5,
  transfer_weight: 0.5,
  /** How τ aggregates the cosines to the other harnesses' sketch EMAs. */
  transfer_aggregate: "mean" as "mean" | "max",
  /** Softmax temperature over score + bonus. */
  temperature: 0.25,
  /** Exploration bonus c·sqrt(ln(t + 1) / (n_h + 1)), t = observations so far, n_h = observations of h. */
  bonus: 0.5,
  /** Probability floor: p = (1 − K·p_min)·softmax + p_min; needs K·p_min ≤ 1. */
  p_min: 0.05,
  /**
   * Probe harnesses: never trained on; every `probe_every` steps a few rollouts per probe harness (`probe_tasks` of the
   * step's tasks × `probe_samples`, default the run's `budget.samples`) give a gradient sketch that is not applied.
   * τ = (1 − probe_weight)·τ_train + probe_weight·τ_probe, τ_probe = mean cosine to the probes' sketch EMAs.
   */
  probe_harnesses: [] as string[],
  probe_every: 1,
  probe_tasks: 1,
  probe_weight: 0.5,
};

const seed = z.number().int().min(0).max(0xffffffff).optional();
const unit = z.number().min(0).lt(1);

const roundRobinSchema = z.strictObject({ name: z.literal("round-robin") });
const uniformSchema = z.strictObject({ name: z.literal("uniform"), seed });
const banditSchema = z
  .strictObject({
    name: z.literal("harness-bandit"),
    /** Sampling seed; default: the run's seed. */
    seed,
    window: z.number().int().min(2).default(BANDIT_DEFAULTS.window),
    sketch_dim: z.number().int().min(1).max(1 << 20).default(BANDIT_DEFAULTS.sketch_dim),
    sketch_seed: z.number().int().min(0).default(BANDIT_DEFAULTS.sketch_seed),
    sketch_decay: unit.default(BANDIT_DEFAULTS.sketch_decay),
    score_decay: unit.default(BANDIT_DEFAULTS.score_decay),
    learn_weight: z.number().min(0).default(BANDIT_DEFAULTS.learn_weight),
    transfer_weight: z.number().min(0).default(BANDIT_DEFAULTS.transfer_weight),
    transfer_aggregate: z.enum(["mean", "max"]).default(BANDIT_DEFAULTS.transfer_aggregate),
    temperature: z.number().positive().default(BANDIT_DEFAULTS.temperature),
    bonus: z.number().min(0).default(BANDIT_DEFAULTS.bonus),
    p_min: z.number().min(0).max(1).default(BANDIT_DEFAULTS.p_min),
    probe_harnesses: z.array(z.string().min(1)).default(() => [...BANDIT_DEFAULTS.probe_harnesses]),
    probe_every: z.number().int().min(1).default(BANDIT_DEFAULTS.probe_every),
    probe_tasks: z.number().int().min(1).default(BANDIT_DEFAULTS.probe_tasks),
    /** GRPO needs ≥ 2 samples per group for a non-zero advantage; default: the run's `budget.samples`. */
    probe_samples: z.number().int().min(2).optional(),
    probe_weight: z.number().min(0).max(1).default(BANDIT_DEFAULTS.probe_weight),
  })
  .refine((c) => c.learn_weight + c.transfer_weight > 0, { message: "learn_weight + transfer_weight must be > 0", path: ["learn_weight"] })
  .refine((c) => new Set(c.probe_harnesses).size === c.probe_harnesses.length, { message: "a probe harness is listed twice", path: ["probe_harnesses"] });

export const schedulerConfigSchema = z.discriminatedUnion("name", [roundRobinSchema, uniformSchema, banditSchema]);

export type SchedulerConfig = z.infer<typeof schedulerConfigSchema>;
export type BanditConfig = z.infer<typeof banditSchema>;

export function parseSchedulerConfig(value: unknown, source = "scheduler"): SchedulerConfig {
  const r = schedulerConfigSchema.safeParse(value);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${[source, ...i.path.map(String)].join(".")}: ${i.message}`);
    throw new UserError("invalid_config", `${source} is not a valid scheduler config:\n${lines.join("\n")}`);
  }
  return r.data;
}

/** The bandit config with every default filled in (for tests and programmatic use). */
export function banditConfig(overrides: Partial<Omit<BanditConfig, "name">> = {}): BanditConfig {
  return parseSchedulerConfig({ name: "harness-bandit", ...overrides }) as BanditConfig;
}
