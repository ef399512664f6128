import { UserError } from "../core/errors.js";
import type { Tokenizer } from "../tokenizer/types.js";
import { completionMasks } from "../trees/masks.js";
import type { CompletionMasks } from "../trees/masks.js";
import type { RolloutForest, TreeCall } from "../trees/types.js";
import type { ProcessConfig } from "./config.js";
import type { Decision } from "./decisions.js";
import { decisionsOf } from "./decisions.js";
import type { GroupPlan, ScoredRollout } from "./groups.js";
import { meanStd } from "./groups.js";

/** One decision's process signal: the raw sub-score entry and its group-normalised term A^process_{i,k}. */
export interface DecisionTerm {
  decision: Decision;
  raw: number;
  normalized: number;
}

export interface ProcessPlan {
  /** Rollout id → its mapped decisions with their terms, in decision order. */
  perRollout: Map<string, DecisionTerm[]>;
  /** Sub-score entries with no decision to map onto (more entries than decisions found). */
  unmappedEntries: number;
  /** Included rollouts whose verifier gave no such list. */
  missingLists: number;
}

function subscoreList(r: ScoredRollout, key: string): number[] | null {
  const v = r.verifier?.subscores[key];
  return Array.isArray(v) ? v : null;
}

/**
 * Harness-RL's process term: for each group and decision index k, the entries p_{i,k} of the members that have a k-th
 * decision are normalised among themselves, (p − mean_k) / (std_k + eps) (or centred only). An index only one member
 * reached has no baseline and gets 0, as do indices where all members agree.
 */
export function planProcess(plan: GroupPlan, results: readonly ScoredRollout[], forests: ReadonlyMap<string, RolloutForest>, config: ProcessConfig, eps: number): ProcessPlan {
  const perRollout = new Map<string, DecisionTerm[]>();
  let unmappedEntries = 0;
  let missingLists = 0;
  const byGroup = new Map<string, string[]>();
  for (const r of results) {
    const a = plan.rollouts.get(r.rolloutId);
    if (!a?.included) continue;
    const list = subscoreList(r, config.subscore);
    const forest = forests.get(r.rolloutId);
    if (!list) missingLists++;
    if (!list || !forest) continue;
    const decisions = decisionsOf(forest, config);
    unmappedEntries += Math.max(0, list.length - decisions.length);
    const n = Math.min(list.length, decisions.length);
    const terms: DecisionTerm[] = [];
    for (let k = 0; k < n; k++) terms.push({ decision: decisions[k] as Decision, raw: list[k] as number, normalized: 0 });
    perRollout.set(r.rolloutId, terms);
    const g = byGroup.get(a.group);
    if (g) g.push(r.rolloutId);
    else byGroup.set(a.group, [r.rolloutId]);
  }
  for (const ids of byGroup.values()) {
    const depth = Math.max(0, ...ids.map((id) => perRollout.get(id)?.length ?? 0));
    for (let k = 0; k < depth; k++) {
      const at = ids.flatMap((id) => {
        const t = perRollout.get(id)?.[k];
        return t ? [t] : [];
      });
      if (at.length < 2) continue;
      const { mean, std } = meanStd(at.map((t) => t.raw));
      if (std <= 1e-12) continue;
      for (const t of at) t.normalized = config.normalizeStd ? (t.raw - mean) / (std + eps) : t.raw - mean;
    }
  }
  return { perRollout, unmappedEntries, missingLists };
}

/** Per call id, a value per completion token (what `processTokenTerms` / `processTokenRewards` return). */
export type CallTokenValues = Map<string, Float32Array>;

function callsById(forests: Iterable<RolloutForest>): Map<string, TreeCall> {
  const m = new Map<string, TreeCall>();
  for (const f of forests) for (const t of f.trees) for (const c of t.calls) m.set(c.callId, c);
  return m;
}

/** The completion offsets a decision's term lands on under `target`. */
function decisionTokens(d: Decision, call: TreeCall, target: ProcessConfig["target"], masks: () => CompletionMasks): number[] {
  const n = call.record.completionTokens.length;
  if (target === "call") return Array.from({ length: n }, (_, i) => i);
  const m = masks();
  if (d.toolCall !== null) {
    const tc = m.toolCalls[d.toolCall];
    return tc ? [...tc.action, ...tc.args].sort((a, b) => a - b) : [];
  }
  const out: number[] = [];
  for (let i = 0; i < n; i++) if (m.action[i] === 1 || m.args[i] === 1) out.push(i);
  return out;
}

function resolve(plan: ProcessPlan, forests: Iterable<RolloutForest>, target: ProcessConfig["target"], tokenizer: Tokenizer | undefined, place: (terms: { term: DecisionTerm; tokens: number[] }[], n: number) => Float32Array): CallTokenValues {
  if (target === "masks" && !tokenizer) throw new UserError("invalid_config", "advantage.process.target = \"masks\" needs the policy's tokenizer (action/args masks)");
  const calls = callsById(forests);
  const byCall = new Map<string, { term: DecisionTerm; tokens: number[] }[]>();
  const maskCache = new Map<string, CompletionMasks>();
  for (const terms of plan.perRollout.values()) {
    for (const term of terms) {
      const call = calls.get(term.decision.callId);
      if (!call) continue;
      const masks = (): CompletionMasks => {
        let m = maskCache.get(call.callId);
        if (!m) {
          m = completionMasks(tokenizer as Tokenizer, call.record.completionTokens);
          maskCache.set(call.callId, m);
        }
        return m;
      };
      const entry = { term, tokens: decisionTokens(term.decision, call, target, masks) };
      const list = byCall.get(call.callId);
      if (list) list.push(entry);
      else byCall.set(call.callId, [entry]);
    }
  }
  const out: CallTokenValues = new Map();
  for (const [callId, entries] of byCall) out.set(callId, place(entries, (calls.get(callId) as TreeCall).record.completionTokens.length));
  return out;
}

/**
 * GRPO: the process term A^process per completion token of each deciding call (without c_p). A token covered by several
 * decisions of the same call (whole-call target, parallel tool calls) gets their mean: a call is not rewarded more for
 * making more decisions.
 */
export function processTokenTerms(plan: ProcessPlan, forests: Iterable<RolloutForest>, target: ProcessConfig["target"], tokenizer?: Tokenizer): CallTokenValues {
  return resolve(plan, forests, target, tokenizer, (entries, n) => {
    const sum = new Float32Array(n);
    const count = new Uint16Array(n);
    for (const { term, tokens } of entries) {
      for (const i of tokens) {
        sum[i] = (sum[i] as number) + term.normalized;
        count[i] = (count[i] as number) + 1;
      }
    }
    for (let i = 0; i < n; i++) if ((count[i] as number) > 0) sum[i] = (sum[i] as number) / (count[i] as number);
    return sum;
  });
}

/** PPO: the raw process reward p_{i,k} (without c_p) on the last token of each decision (rewards of one token add up). */
export function processTokenRewards(plan: ProcessPlan, forests: Iterable<RolloutForest>, target: ProcessConfig["target"], tokenizer?: Tokenizer): CallTokenValues {
  return resolve(plan, forests, target, tokenizer, (entries, n) => {
    const out = new Float32Array(n);
    for (const { term, tokens } of entries) {
      const last = tokens[tokens.length - 1];
      if (last !== undefined) out[last] = (out[last] as number) + term.raw;
    }
    return out;
  });
}
