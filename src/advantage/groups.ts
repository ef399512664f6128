import type { RolloutResult } from "../tasks/rollout-result.js";
import type { AdvantageConfig, GroupField } from "./config.js";

/** The fields of a rollout result the estimators read (a RolloutResult satisfies it). */
export type ScoredRollout = Pick<RolloutResult, "rolloutId" | "taskId" | "harness" | "family" | "split" | "status" | "score" | "verifier">;

/** Why a rollout contributes no gradient. `infra_error`: ours, not the policy's; the others: its group has no baseline. */
export type ExclusionReason = "infra_error" | "zero_variance" | "singleton";

export interface RolloutAdvantage {
  rolloutId: string;
  group: string;
  harness: string;
  reward: number;
  /** Outcome advantage (0 for excluded rollouts and for zero-variance / singleton groups). */
  advantage: number;
  /** Whether the rollout's tokens are trained on (false: loss weight 0 and left out of every denominator). */
  included: boolean;
  excluded: ExclusionReason | null;
}

export interface GroupSummary {
  key: string;
  /** Valid members (infra errors left out). */
  size: number;
  mean: number;
  std: number;
  kind: "normal" | "zero_variance" | "singleton";
  dropped: boolean;
}

/** Outcome advantages of one batch of rollouts, grouped. */
export interface GroupPlan {
  rollouts: Map<string, RolloutAdvantage>;
  groups: GroupSummary[];
  /** Rollouts left out entirely (infra errors, and dropped groups' members). */
  excluded: { rolloutId: string; reason: ExclusionReason }[];
}

export function groupKey(r: ScoredRollout, fields: readonly GroupField[]): string {
  return fields.map((f) => `${f}=${String(r[f])}`).join("|");
}

/** Population mean and std (1/n), as GRPO implementations use. */
export function meanStd(values: readonly number[]): { mean: number; std: number } {
  const n = values.length;
  if (n === 0) return { mean: 0, std: 0 };
  let s = 0;
  for (const v of values) s += v;
  const mean = s / n;
  let q = 0;
  for (const v of values) q += (v - mean) * (v - mean);
  return { mean, std: Math.sqrt(q / n) };
}

/** Spread below this counts as zero variance (rewards are floats; equal scores must not produce 1e-17 / eps blow-ups). */
const ZERO_SPREAD = 1e-12;

/**
 * GRPO's outcome term: A_i = (r_i − mean_g) / (std_g + eps), or r_i − mean_g without std normalisation. Infra errors are
 * removed before grouping, so they neither get an advantage nor shift their group's baseline. Zero-variance and
 * single-member groups get advantage 0 and are reported; `drop` also removes their tokens from the loss.
 */
export function planGroups(results: readonly ScoredRollout[], config: Pick<AdvantageConfig, "groupBy" | "normalizeStd" | "eps" | "zeroVariance" | "singletons">): GroupPlan {
  const rollouts = new Map<string, RolloutAdvantage>();
  const excluded: GroupPlan["excluded"] = [];
  const members = new Map<string, ScoredRollout[]>();
  for (const r of results) {
    const key = groupKey(r, config.groupBy);
    if (r.status === "infra_error") {
      rollouts.set(r.rolloutId, { rolloutId: r.rolloutId, group: key, harness: r.harness, reward: r.score, advantage: 0, included: false, excluded: "infra_error" });
      excluded.push({ rolloutId: r.rolloutId, reason: "infra_error" });
      continue;
    }
    const list = members.get(key);
    if (list) list.push(r);
    else members.set(key, [r]);
  }
  const groups: GroupSummary[] = [];
  for (const [key, list] of members) {
    const { mean, std } = meanStd(list.map((r) => r.score));
    const kind: GroupSummary["kind"] = list.length === 1 ? "singleton" : std <= ZERO_SPREAD ? "zero_variance" : "normal";
    const dropped = (kind === "singleton" && config.singletons === "drop") || (kind === "zero_variance" && config.zeroVariance === "drop");
    groups.push({ key, size: list.length, mean, std, kind, dropped });
    for (const r of list) {
      const advantage = kind === "normal" ? (config.normalizeStd ? (r.score - mean) / (std + config.eps) : r.score - mean) : 0;
      const reason: ExclusionReason | null = kind === "normal" ? null : kind;
      rollouts.set(r.rolloutId, { rolloutId: r.rolloutId, group: key, harness: r.harness, reward: r.score, advantage, included: !dropped, excluded: dropped ? reason : null });
      if (dropped && reason) excluded.push({ rolloutId: r.rolloutId, reason });
    }
  }
  return { rollouts, groups, excluded };
}

/** Rollout ids whose trees should go into the batch (build the batch from these forests only to save compute). */
export function trainedRollouts(plan: GroupPlan): Set<string> {
  const out = new Set<string>();
  for (const r of plan.rollouts.values()) if (r.included) out.add(r.rolloutId);
  return out;
}
