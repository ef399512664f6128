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
  })
  .refine((c) => c.learn_weight + c.transfer_weight > 0, { message: "learn_weight + transfer_weight must be > 0", path: ["learn_weight"] });

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
