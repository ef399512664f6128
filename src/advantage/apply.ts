import type { BuiltBatch, CallRef } from "../batch/batch-index.js";
import { UserError } from "../core/errors.js";
import type { RolloutForest } from "../trees/types.js";
import type { AdvantageConfig } from "./config.js";
import { treeGae } from "./gae.js";
import type { GroupPlan, ScoredRollout } from "./groups.js";
import { planGroups } from "./groups.js";
import type { CallTokenValues, ProcessPlan } from "./process.js";
import { planProcess, processTokenRewards, processTokenTerms } from "./process.js";
import type { AdvantageStats } from "./stats.js";
import { perHarnessStats } from "./stats.js";
import { buildTokenTable } from "./token-table.js";
import { uniqueTokenWeights } from "./weights.js";

export interface ApplyAdvantagesInput {
  built: BuiltBatch;
  /** Results of the rollouts in the batch (and of the rest of their groups: they shape the baselines). */
  results: readonly ScoredRollout[];
  config: AdvantageConfig;
  /** The rollouts' forests: needed for process rewards (decisions are the main agent's calls). */
  forests?: readonly RolloutForest[];
  /** PPO: per row, the critic's value of each token (Trainer.criticValues on this batch). */
  values?: readonly Float32Array[];
  /** A plan made earlier with planGroups (e.g. to leave dropped rollouts out of the batch); made here when absent. */
  plan?: GroupPlan;
  /**
   * Leaves a call's tokens out of the loss (weight 0, outside every denominator; counted as `filteredTokens`), e.g.
   * tokens sampled by a policy too many versions behind in async mode. Group baselines are unaffected.
   */
  excludeCall?: (call: CallRef) => boolean;
  /** `negative_scope: branch`: call id → completion offset of its branch token (branchPoints over the batch's calls). */
  branches?: ReadonlyMap<string, number>;
}

export interface ApplyAdvantagesResult {
  plan: GroupPlan;
  process: ProcessPlan | null;
  stats: AdvantageStats;
}

const enum TokenState {
  Trained,
  Excluded,
  Unscored,
  Filtered,
}

/**
 * Fills `advantages`, `lossWeights` (and for PPO `returns`) of every row of a built batch in place. Estimators work on
 * unique trainable tokens (call, completion offset); each copy of a token gets its advantage and an equal share of its
 * loss weight, so the flat and tree-packed layouts of the same rollouts give the same gradient.
 */
export function applyAdvantages(input: ApplyAdvantagesInput): ApplyAdvantagesResult {
  const { built, config } = input;
  const plan = input.plan ?? planGroups(input.results, config);
  const table = buildTokenTable(built);
  const calls = built.index.calls;
  const state = new Uint8Array(table.size);
  const filtered = new Map<number, boolean>();
  for (let u = 0; u < table.size; u++) {
    const c = table.callOf[u] as number;
    const a = plan.rollouts.get(calls[c]?.rolloutId ?? "");
    state[u] = a === undefined ? TokenState.Unscored : a.included ? TokenState.Trained : TokenState.Excluded;
    if (state[u] === TokenState.Trained && input.excludeCall) {
      let f = filtered.get(c);
      if (f === undefined) {
        f = input.excludeCall(calls[c] as CallRef);
        filtered.set(c, f);
      }
      if (f) state[u] = TokenState.Filtered;
    }
  }
  const trained = (u: number): boolean => state[u] === TokenState.Trained;

  let process: ProcessPlan | null = null;
  let perCall: CallTokenValues = new Map();
  if (config.process) {
    if (!input.forests) throw new UserError("invalid_config", "process rewards need the rollouts' forests (decisions are the main agent's calls)");
    const byId = new Map(input.forests.map((f) => [f.rolloutId, f]));
    process = planProcess(plan, input.results, byId, config.process, config.eps);
    const fn = config.estimator === "grpo" ? processTokenTerms : processTokenRewards;
    perCall = fn(process, input.forests, config.process.target);
  }
  const coef = config.process?.coef ?? 0;
  const processAt = (u: number): number => {
    const arr = perCall.get(calls[table.callOf[u] as number]?.callId ?? "");
    return arr ? coef * ((arr[table.offsetOf[u] as number] as number | undefined) ?? 0) : 0;
  };

  let adv: Float32Array;
  let returns: Float32Array | null = null;
  let ppo: AdvantageStats["ppo"] = null;
  let rawMeanAbs = 0;
  if (config.estimator === "grpo") {
    adv = new Float32Array(table.size);
    for (let u = 0; u < table.size; u++) {
      if (!trained(u)) continue;
      const a = plan.rollouts.get(calls[table.callOf[u] as number]?.rolloutId ?? "");
      adv[u] = (a?.advantage ?? 0) + processAt(u);
    }
  } else {
    if (!input.values) throw new UserError("invalid_values", "PPO needs the critic's values for the batch (Trainer.criticValues)");
    const gae = treeGae({
      built,
      table,
      values: input.values,
      config: config.ppo,
      includedRollout: (id) => plan.rollouts.get(id)?.included === true,
      outcome: (id) => plan.rollouts.get(id)?.reward ?? 0,
      tokenReward: processAt,
    });
    adv = gae.advantages;
    returns = gae.returns;
    let n = 0;
    let sumRet = 0;
    let sumV = 0;
    let sumPaths = 0;
    for (let u = 0; u < table.size; u++) {
      if (!trained(u) || (gae.paths[u] as number) === 0) continue;
      n++;
      rawMeanAbs += Math.abs(adv[u] as number);
      sumRet += returns[u] as number;
      sumV += gae.values[u] as number;
      sumPaths += gae.paths[u] as number;
    }
    rawMeanAbs = n ? rawMeanAbs / n : 0;
    ppo = { meanReturn: n ? sumRet / n : 0, meanValue: n ? sumV / n : 0, pathsPerToken: n ? sumPaths / n : 0 };
    if (config.ppo.whiten) whiten(adv, trained);
  }

  let branchTokens: number | null = null;
  if (config.negativeScope === "branch") {
    const branches = input.branches;
    if (!branches) throw new UserError("invalid_config", "negative_scope \"branch\" needs the batch's branch points (branchPoints over its calls)");
    branchTokens = 0;
    for (let u = 0; u < adv.length; u++) {
      if (!trained(u) || (adv[u] as number) >= 0) continue;
      if (branches.get(calls[table.callOf[u] as number]?.callId ?? "") === table.offsetOf[u]) branchTokens++;
      else adv[u] = 0;
    }
  }
  if (config.negativeScale !== 1) {
    for (let u = 0; u < adv.length; u++) if (trained(u) && (adv[u] as number) < 0) adv[u] = (adv[u] as number) * config.negativeScale;
  }

  const weights = uniqueTokenWeights(built, table, config.aggregation, trained, config.sumNormalizer);
  let lossWeightSum = 0;
  built.batch.rows.forEach((row, r) => {
    const uids = table.uid[r] as Int32Array;
    const ret = returns ? new Float32Array(row.tokens.length) : null;
    for (let i = 0; i < row.tokens.length; i++) {
      const u = uids[i] as number;
      if (u < 0 || !trained(u)) {
        row.advantages[i] = 0;
        row.lossWeights[i] = 0;
        continue;
      }
      row.advantages[i] = adv[u] as number;
      const w = (weights[u] as number) / (table.copies[u] as number);
      row.lossWeights[i] = w;
      lossWeightSum += w;
      if (ret && returns) ret[i] = returns[u] as number;
    }
    if (ret) row.returns = ret;
  });

  const stats = summarise(plan, config, table.size, state, adv, lossWeightSum);
  stats.branchTokens = branchTokens;
  if (config.estimator === "ppo") stats.meanAbsAdvantage = rawMeanAbs;
  stats.ppo = ppo;
  if (process) {
    let decisions = 0;
    let abs = 0;
    for (const terms of process.perRollout.values()) {
      decisions += terms.length;
      for (const t of terms) abs += Math.abs(t.normalized);
    }
    stats.process = { decisions, unmappedEntries: process.unmappedEntries, missingLists: process.missingLists, meanAbsTerm: decisions ? abs / decisions : 0 };
  }
  return { plan, process, stats };
}

/** Mean 0 / std 1 over the trained unique tokens (PPO advantage whitening); a constant batch is only centred. */
function whiten(adv: Float32Array, trained: (u: number) => boolean): void {
  let n = 0;
  let s = 0;
  for (let u = 0; u < adv.length; u++) {
    if (!trained(u)) continue;
    n++;
    s += adv[u] as number;
  }
  if (n === 0) return;
  const mean = s / n;
  let q = 0;
  for (let u = 0; u < adv.length; u++) if (trained(u)) q += ((adv[u] as number) - mean) ** 2;
  const std = Math.sqrt(q / n);
  for (let u = 0; u < adv.length; u++) if (trained(u)) adv[u] = std > 1e-8 ? ((adv[u] as number) - mean) / std : (adv[u] as number) - mean;
}

function summarise(plan: GroupPlan, config: AdvantageConfig, size: number, state: Uint8Array, adv: Float32Array, lossWeightSum: number): AdvantageStats {
  const excluded = { infra_error: 0, zero_variance: 0, singleton: 0 };
  for (const e of plan.excluded) excluded[e.reason]++;
  let valid = 0;
  let included = 0;
  let absSum = 0;
  for (const r of plan.rollouts.values()) {
    if (r.excluded === "infra_error") continue;
    valid++;
    if (r.included) included++;
    absSum += Math.abs(r.advantage);
  }
  let n = 0;
  let excludedTokens = 0;
  let unscored = 0;
  let filteredTokens = 0;
  let sum = 0;
  let abs = 0;
  for (let u = 0; u < size; u++) {
    if (state[u] === TokenState.Excluded) excludedTokens++;
    else if (state[u] === TokenState.Unscored) unscored++;
    else if (state[u] === TokenState.Filtered) filteredTokens++;
    else {
      n++;
      sum += adv[u] as number;
      abs += Math.abs(adv[u] as number);
    }
  }
  const mean = n ? sum / n : 0;
  let q = 0;
  for (let u = 0; u < size; u++) if (state[u] === TokenState.Trained) q += ((adv[u] as number) - mean) ** 2;
  return {
    estimator: config.estimator,
    aggregation: config.aggregation,
    rollouts: plan.rollouts.size,
    validRollouts: valid,
    includedRollouts: included,
    excluded,
    groups: plan.groups.length,
    zeroVarianceGroups: plan.groups.filter((g) => g.kind === "zero_variance").length,
    singletonGroups: plan.groups.filter((g) => g.kind === "singleton").length,
    droppedGroups: plan.groups.filter((g) => g.dropped).length,
    meanAbsAdvantage: valid ? absSum / valid : 0,
    tokenMeanAbsAdvantage: n ? abs / n : 0,
    tokenAdvantageMean: mean,
    tokenAdvantageStd: n ? Math.sqrt(q / n) : 0,
    trainableTokens: n,
    excludedTokens,
    unscoredTokens: unscored,
    filteredTokens,
    lossWeightSum,
    perHarness: perHarnessStats(plan),
    process: null,
    ppo: null,
    branchTokens: null,
  };
}
