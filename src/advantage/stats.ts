import type { Aggregation } from "./config.js";
import type { ExclusionReason, GroupPlan } from "./groups.js";

export interface HarnessAdvantageStats {
  rollouts: number;
  /** Rollouts not excluded for infrastructure errors. */
  valid: number;
  /** Rollouts whose tokens are trained on. */
  included: number;
  infraErrors: number;
  meanReward: number;
  /** Mean |outcome advantage| over the valid rollouts (0 for zero-variance / singleton groups). */
  meanAbsAdvantage: number;
}

export interface AdvantageStats {
  estimator: "grpo" | "ppo";
  aggregation: Aggregation;
  rollouts: number;
  validRollouts: number;
  includedRollouts: number;
  excluded: Record<ExclusionReason, number>;
  groups: number;
  zeroVarianceGroups: number;
  singletonGroups: number;
  droppedGroups: number;
  /**
   * Learnability (HarnessBandit): mean |outcome advantage| over the valid rollouts, counting rollouts of zero-variance
   * and singleton groups as 0 whether or not they were dropped. GRPO only; for PPO it is `tokenMeanAbsAdvantage`.
   */
  meanAbsAdvantage: number;
  /** Mean |advantage| over the unique trainable tokens that are trained on (outcome + process, or GAE). */
  tokenMeanAbsAdvantage: number;
  tokenAdvantageMean: number;
  tokenAdvantageStd: number;
  /** Unique trainable tokens trained on, and those left at weight 0 (excluded rollouts, or rollouts without a result). */
  trainableTokens: number;
  excludedTokens: number;
  unscoredTokens: number;
  /** Unique trainable tokens left out by `excludeCall` (e.g. too stale). */
  filteredTokens: number;
  /** Σ loss weights over all token copies (1 for the mean aggregations when anything is trained). */
  lossWeightSum: number;
  perHarness: Record<string, HarnessAdvantageStats>;
  process: { decisions: number; unmappedEntries: number; missingLists: number; meanAbsTerm: number } | null;
  ppo: { meanReturn: number; meanValue: number; pathsPerToken: number } | null;
  /** `negative_scope: branch`: unique tokens that kept a negative advantage (one per worse call that branched); else null. */
  branchTokens: number | null;
}

export function perHarnessStats(plan: GroupPlan): Record<string, HarnessAdvantageStats> {
  const out: Record<string, HarnessAdvantageStats> = {};
  const sums = new Map<string, { reward: number; abs: number }>();
  for (const r of plan.rollouts.values()) {
    const h = (out[r.harness] ??= { rollouts: 0, valid: 0, included: 0, infraErrors: 0, meanReward: 0, meanAbsAdvantage: 0 });
    const s = sums.get(r.harness) ?? { reward: 0, abs: 0 };
    sums.set(r.harness, s);
    h.rollouts++;
    if (r.excluded === "infra_error") {
      h.infraErrors++;
      continue;
    }
    h.valid++;
    if (r.included) h.included++;
    s.reward += r.reward;
    s.abs += Math.abs(r.advantage);
  }
  for (const [name, h] of Object.entries(out)) {
    const s = sums.get(name) as { reward: number; abs: number };
    h.meanReward = h.valid ? s.reward / h.valid : 0;
    h.meanAbsAdvantage = h.valid ? s.abs / h.valid : 0;
  }
  return out;
}

/** Flattens the statistics into metric names for metrics.jsonl (`adv/…`, `adv/<harness>/…`). */
export function advantageMetrics(s: AdvantageStats): Record<string, number> {
  const m: Record<string, number> = {
    "adv/learnability": s.meanAbsAdvantage,
    "adv/token_mean_abs": s.tokenMeanAbsAdvantage,
    "adv/token_mean": s.tokenAdvantageMean,
    "adv/token_std": s.tokenAdvantageStd,
    "adv/rollouts": s.rollouts,
    "adv/included_rollouts": s.includedRollouts,
    "adv/excluded_infra": s.excluded.infra_error,
    "adv/excluded_zero_variance": s.excluded.zero_variance,
    "adv/excluded_singleton": s.excluded.singleton,
    "adv/groups": s.groups,
    "adv/zero_variance_groups": s.zeroVarianceGroups,
    "adv/singleton_groups": s.singletonGroups,
    "adv/trainable_tokens": s.trainableTokens,
    "adv/excluded_tokens": s.excludedTokens,
    "adv/unscored_tokens": s.unscoredTokens,
    "adv/filtered_tokens": s.filteredTokens,
  };
  for (const [h, v] of Object.entries(s.perHarness)) {
    m[`adv/${h}/mean_abs`] = v.meanAbsAdvantage;
    m[`adv/${h}/mean_reward`] = v.meanReward;
    m[`adv/${h}/included`] = v.included;
    m[`adv/${h}/infra_errors`] = v.infraErrors;
  }
  if (s.process) {
    m["adv/process_decisions"] = s.process.decisions;
    m["adv/process_mean_abs_term"] = s.process.meanAbsTerm;
    m["adv/process_unmapped"] = s.process.unmappedEntries;
  }
  if (s.branchTokens !== null) m["adv/branch_tokens"] = s.branchTokens;
  if (s.ppo) {
    m["adv/ppo_mean_return"] = s.ppo.meanReturn;
    m["adv/ppo_mean_value"] = s.ppo.meanValue;
  }
  return m;
}
