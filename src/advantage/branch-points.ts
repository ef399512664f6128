import type { GroupPlan } from "./groups.js";

/** One sampled call, as the branch search reads it: the exact prompt it was given and the tokens it sampled. */
export interface SampledCall {
  callId: string;
  /** Null for a call recorded outside any rollout: it takes no part. */
  rolloutId: string | null;
  promptTokens: readonly number[];
  completionTokens: readonly number[];
}

/**
 * Where each worse rollout left the paths of its group's better rollouts: call id → the completion offset of its
 * branch token (`advantage.negative_scope: branch`).
 *
 * A call of rollout r is compared with the calls of better rollouts (same group, higher reward) that got exactly the
 * same prompt: until the first token in which r's completion differs from every one of them, r sampled what a better
 * rollout sampled in the same context, so those tokens are not why r scored less; the first differing token is where
 * it went its own way. Calls whose prompt no better rollout saw come after such a branch (or on a path no better
 * rollout took) and get no entry; neither does a call that sampled a better rollout's completion or a prefix of one
 * (e.g. cut at `max_tokens`: nothing it sampled differs).
 */
export function branchPoints(calls: readonly SampledCall[], plan: GroupPlan): Map<string, number> {
  // Calls by group and prompt, so each worse call is compared only with calls that saw its exact context.
  const byPrompt = new Map<string, SampledCall[]>();
  const keyOf = new Map<SampledCall, { key: string; reward: number }>();
  for (const call of calls) {
    const r = call.rolloutId === null ? undefined : plan.rollouts.get(call.rolloutId);
    if (!r || r.excluded === "infra_error") continue;
    const key = `${r.group}\u0000${promptKey(call.promptTokens)}`;
    keyOf.set(call, { key, reward: r.reward });
    const list = byPrompt.get(key);
    if (list) list.push(call);
    else byPrompt.set(key, [call]);
  }
  const out = new Map<string, number>();
  for (const call of calls) {
    const own = keyOf.get(call);
    if (!own) continue;
    let longest = -1;
    for (const other of byPrompt.get(own.key) ?? []) {
      const better = keyOf.get(other);
      if (!better || better.reward <= own.reward || !samePrompt(other.promptTokens, call.promptTokens)) continue;
      longest = Math.max(longest, commonPrefix(call.completionTokens, other.completionTokens));
    }
    if (longest >= 0 && longest < call.completionTokens.length) out.set(call.callId, longest);
  }
  return out;
}

/** A short key for a prompt (FNV-1a over its tokens, with its length); equal keys are checked token by token. */
function promptKey(tokens: readonly number[]): string {
  let h = 0x811c9dc5;
  for (const t of tokens) {
    h ^= t & 0xffff;
    h = Math.imul(h, 0x01000193);
    h ^= t >>> 16;
    h = Math.imul(h, 0x01000193);
  }
  return `${tokens.length}:${(h >>> 0).toString(36)}`;
}

function samePrompt(a: readonly number[], b: readonly number[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
