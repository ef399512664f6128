import type { RolloutResult } from "../rollout/types.js";

export interface GroupAdvantages {
  /** Advantage per rollout id (infra errors absent). */
  byRollout: Map<string, number>;
  groups: number;
  zeroVarianceGroups: number;
  excluded: number;
}

/**
 * GRPO outcome advantages: rollouts grouped by (task, harness), reward normalised within the group (mean-centred,
 * optionally divided by the group's standard deviation). Infrastructure failures are excluded before grouping; groups
 * whose rewards are all equal carry no signal and get 0.
 */
export function grpoAdvantages(results: readonly RolloutResult[], options: { stdNormalize: boolean; eps?: number }): GroupAdvantages {
  const eps = options.eps ?? 1e-6;
  const groups = new Map<string, RolloutResult[]>();
  let excluded = 0;
  for (const r of results) {
    if (r.status === "infra_error") {
      excluded++;
      continue;
    }
    const key = `${r.taskId}\u0000${r.harness}`;
    const g = groups.get(key) ?? [];
    g.push(r);
    groups.set(key, g);
  }
  const byRollout = new Map<string, number>();
  let zero = 0;
  for (const g of groups.values()) {
    const mean = g.reduce((s, r) => s + r.score, 0) / g.length;
    const std = Math.sqrt(g.reduce((s, r) => s + (r.score - mean) ** 2, 0) / g.length);
    if (std < eps) zero++;
    for (const r of g) byRollout.set(r.rolloutId, std < eps ? 0 : options.stdNormalize ? (r.score - mean) / (std + eps) : r.score - mean);
  }
  return { byRollout, groups: groups.size, zeroVarianceGroups: zero, excluded };
}
