import { z } from "zod";
import { UserError } from "../core/errors.js";

/** Fields of a rollout result that may form a GRPO group key. (task, harness) is the mix-harness default. */
export const GROUP_FIELDS = ["taskId", "harness", "family", "split"] as const;
export type GroupField = (typeof GROUP_FIELDS)[number];

/** The YAML spelling of each group field (snake_case like every config key and value). */
const GROUP_NAMES = { task_id: "taskId", harness: "harness", family: "family", split: "split" } as const satisfies Record<string, GroupField>;
type GroupName = keyof typeof GROUP_NAMES;
const GROUP_NAME_OF = Object.fromEntries(Object.entries(GROUP_NAMES).map(([k, v]) => [v, k])) as Record<GroupField, GroupName>;

/**
 * How the loss is aggregated over trainable tokens (see docs/algorithms.md). Every option is expressed as per-token loss
 * weights over *unique* trainable tokens, so the tree-packed and the flat layout give the same gradient.
 */
export const AGGREGATIONS = ["token-mean", "sequence-mean", "prompt-equal", "token-sum"] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];

const processSectionSchema = z.strictObject({
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
  normalize_std: z.boolean().default(true),
});

const ppoSectionSchema = z.strictObject({
  gamma: z.number().min(0).max(1).default(1),
  lambda: z.number().min(0).max(1).default(0.95),
  /** Whiten advantages over the batch's unique trainable tokens (mean 0, std 1) after GAE. */
  whiten: z.boolean().default(true),
});

/**
 * The `advantage:` section of the run config: the estimator and everything that turns rewards into per-token
 * advantages and loss weights (the loss itself and the optimizer are `algorithm:`). snake_case, unknown keys are errors,
 * every default is written here once. Code uses the camelCase `AdvantageConfig` (`toAdvantageConfig`).
 */
export const advantageSectionSchema = z
  .strictObject({
    estimator: z.enum(["grpo", "ppo"]).default("grpo"),
    group_by: z.array(z.enum(Object.keys(GROUP_NAMES) as [GroupName, ...GroupName[]])).min(1).default(["task_id", "harness"]),
    /** GRPO: divide by the group std (false = Dr. GRPO: centre only). */
    normalize_std: z.boolean().default(true),
    eps: z.number().positive().default(1e-6),
    /** Groups whose valid rewards are all equal: `keep` (advantage 0, tokens still count in the loss denominator) or `drop`. */
    zero_variance: z.enum(["keep", "drop"]).default("keep"),
    /** Groups with a single valid member: no baseline exists, advantage 0; `keep` or `drop` as above. */
    singletons: z.enum(["keep", "drop"]).default("keep"),
    /**
     * Multiplies every negative token advantage (after normalisation, whitening and process terms); 1 = the plain
     * estimator. Below 1 the update leans towards imitating the group's successes (positive/negative sample
     * reweighting): when most of a group succeeds, its few failures are long low-probability tails whose large
     * ∇log π otherwise dominates the step and can spread mass off the successful path (docs/algorithms.md).
     */
    negative_scale: z.number().min(0).max(1).default(1),
    /**
     * Which tokens of a worse rollout carry its negative advantage: `all`, or `branch`: only the token at which each of
     * its calls left the paths of its group's better rollouts (same prompt, first differing sampled token;
     * src/advantage/branch-points.ts), times `negative_scale`. What it sampled before that point a better rollout
     * sampled too, and what follows is the tail that sampling went down after the mistake, whose large ∇log π is what
     * makes full negatives derail small policies. GRPO only.
     */
    negative_scope: z.enum(["all", "branch"]).default("all"),
    aggregation: z.enum(AGGREGATIONS).default("token-mean"),
    /** token-sum only: divide by this constant (Dr. GRPO's fixed normaliser); 1 = plain sum. */
    sum_normalizer: z.number().positive().default(1),
    process: processSectionSchema.nullable().default(null),
    ppo: ppoSectionSchema.prefault({}),
  })
  .superRefine((c, ctx) => {
    if (c.process?.decisions === "tool" && c.process.tool === undefined) ctx.addIssue({ code: "custom", path: ["process", "tool"], message: 'process.decisions = "tool" needs process.tool (the tool name)' });
    // PPO's negative advantages are per-token GAE values, not a rollout's outcome spread over its tokens.
    if (c.negative_scope === "branch" && c.estimator !== "grpo") ctx.addIssue({ code: "custom", path: ["negative_scope"], message: 'negative_scope "branch" is for the grpo estimator (PPO\'s token advantages come from its critic)' });
  });

export type AdvantageSection = z.output<typeof advantageSectionSchema>;

export interface ProcessConfig {
  subscore: string;
  coef: number;
  decisions: "calls" | "tool";
  tool?: string | undefined;
  target: "call" | "masks";
  normalizeStd: boolean;
}

export type PpoConfig = AdvantageSection["ppo"];

/** The advantage estimator's config as the code reads it (the `advantage:` section, camelCase). */
export interface AdvantageConfig {
  estimator: "grpo" | "ppo";
  groupBy: GroupField[];
  normalizeStd: boolean;
  eps: number;
  zeroVariance: "keep" | "drop";
  singletons: "keep" | "drop";
  negativeScale: number;
  negativeScope: "all" | "branch";
  aggregation: Aggregation;
  sumNormalizer: number;
  process: ProcessConfig | null;
  ppo: PpoConfig;
}

/** What code may pass to `parseAdvantageConfig`: any subset of the fields (process and ppo partially too). */
export type AdvantageConfigInput = Partial<Omit<AdvantageConfig, "process" | "ppo">> & {
  process?: (Partial<ProcessConfig> & { subscore: string }) | null;
  ppo?: Partial<PpoConfig>;
};

/** The one mapping from the YAML section to the code's config. */
export function toAdvantageConfig(s: AdvantageSection): AdvantageConfig {
  const p = s.process;
  return {
    estimator: s.estimator,
    groupBy: s.group_by.map((g) => GROUP_NAMES[g]),
    normalizeStd: s.normalize_std,
    eps: s.eps,
    zeroVariance: s.zero_variance,
    singletons: s.singletons,
    negativeScale: s.negative_scale,
    negativeScope: s.negative_scope,
    aggregation: s.aggregation,
    sumNormalizer: s.sum_normalizer,
    process: p && { subscore: p.subscore, coef: p.coef, decisions: p.decisions, ...(p.tool !== undefined ? { tool: p.tool } : {}), target: p.target, normalizeStd: p.normalize_std },
    ppo: s.ppo,
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** camelCase → snake_case keys (code input to the section's spelling). */
function snakeKeys(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]));
}

/**
 * Validates an advantage config given in code (camelCase `AdvantageConfigInput`, any subset), filling defaults from the
 * one section schema; invalid input is a UserError naming the field (in its YAML spelling).
 */
export function parseAdvantageConfig(input: unknown = {}): AdvantageConfig {
  let section: unknown = input ?? {};
  if (isRecord(input)) {
    const snake = snakeKeys(input);
    if (Array.isArray(input.groupBy)) snake.group_by = input.groupBy.map((g: unknown) => (typeof g === "string" && g in GROUP_NAME_OF ? GROUP_NAME_OF[g as GroupField] : g));
    if (isRecord(input.process)) snake.process = snakeKeys(input.process);
    section = snake;
  }
  const parsed = advantageSectionSchema.safeParse(section);
  if (!parsed.success) throw new UserError("invalid_config", `invalid advantage config:\n${parsed.error.issues.map((i) => `  ${["advantage", ...i.path.map(String)].join(".")}: ${i.message}`).join("\n")}`);
  return toAdvantageConfig(parsed.data);
}
