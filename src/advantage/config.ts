import { z } from "zod";
import { UserError } from "../core/errors.js";

/** Fields of a rollout result that may form a GRPO group key. (task, harness) is the mix-harness default. */
export const GROUP_FIELDS = ["taskId", "harness", "family", "split"] as const;
export type GroupField = (typeof GROUP_FIELDS)[number];

/**
 * How the loss is aggregated over trainable tokens (see docs/algorithms.md). Every option is expressed as per-token loss
 * weights over *unique* trainable tokens, so the tree-packed and the flat layout give the same gradient.
 */
export const AGGREGATIONS = ["token-mean", "sequence-mean", "prompt-equal", "token-sum"] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

export const ProcessConfigSchema = z.strictObject({
  /** Verifier sub-score holding the ordered per-decision list (e.g. lookup's `search_hits`). */
  subscore: z.string().min(1),
  /** c_p in A = A_outcome + c_p · A_process. */
  coef: z.number().finite().min(0).default(1),
  /**
   * What entry k of the list refers to: `calls`: the k-th sampled call of the main agent; `tool`: the k-th call of the
   * tool named `tool` made by the main agent (parallel calls in one response count in their order).
   */
  decisions: z.enum(["calls", "tool"]).default("calls"),
  tool: z.string().min(1).optional(),
  /** `call`: every sampled token of the deciding call gets the process term; `masks`: only its action/args tokens. */
  target: z.enum(["call", "masks"]).default("call"),
  /** Divide the per-index process term by the std across group members (else only centre it). */
  normalizeStd: z.boolean().default(true),
});

export const PpoConfigSchema = z.strictObject({
  gamma: z.number().min(0).max(1).default(1),
  lambda: z.number().min(0).max(1).default(0.95),
  /** Whiten advantages over the batch's unique trainable tokens (mean 0, std 1) after GAE. */
  whiten: z.boolean().default(true),
});

export const AdvantageConfigSchema = z.strictObject({
  estimator: z.enum(["grpo", "ppo"]).default("grpo"),
  groupBy: z.array(z.enum(GROUP_FIELDS)).min(1).default(["taskId", "harness"]),
  /** GRPO: divide by the group std (false = Dr. GRPO: centre only). */
  normalizeStd: z.boolean().default(true),
  eps: z.number().positive().default(1e-6),
  /** Groups whose valid rewards are all equal: `keep` (advantage 0, tokens still count in the loss denominator) or `drop`. */
  zeroVariance: z.enum(["keep", "drop"]).default("keep"),
  /** Groups with a single valid member: no baseline exists, advantage 0; `keep` or `drop` as above. */
  singletons: z.enum(["keep", "drop"]).default("keep"),
  /**
   * Multiplies every negative token advantage (after normalisation, whitening and process terms); 1 = the plain
   * estimator. Below 1 the update leans towards imitating the group's successes (positive/negative sample
   * reweighting): when most of a group succeeds, its few failures are long low-probability tails whose large
   * ∇log π otherwise dominates the step and can spread mass off the successful path (docs/algorithms.md).
   */
  negativeScale: z.number().min(0).max(1).default(1),
  aggregation: z.enum(AGGREGATIONS).default("token-mean"),
  /** token-sum only: divide by this constant (Dr. GRPO's fixed normaliser); 1 = plain sum. */
  sumNormalizer: z.number().positive().default(1),
  process: ProcessConfigSchema.nullable().default(null),
  ppo: PpoConfigSchema.prefault({}),
});

export type AdvantageConfigInput = z.input<typeof AdvantageConfigSchema>;
export type AdvantageConfig = z.output<typeof AdvantageConfigSchema>;
export type ProcessConfig = z.output<typeof ProcessConfigSchema>;
export type PpoConfig = z.output<typeof PpoConfigSchema>;

/** Validates an advantage config (from YAML or code), filling defaults; invalid input is a UserError naming the field. */
export function parseAdvantageConfig(input: unknown = {}): AdvantageConfig {
  const parsed = AdvantageConfigSchema.safeParse(input ?? {});
  if (!parsed.success) throw new UserError("invalid_config", `invalid advantage config: ${z.prettifyError(parsed.error)}`);
  const c = parsed.data;
  if (c.process && c.process.decisions === "tool" && c.process.tool === undefined) {
    throw new UserError("invalid_config", "advantage.process.decisions = \"tool\" needs advantage.process.tool (the tool name)");
  }
  return c;
}
