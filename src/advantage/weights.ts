import type { BuiltBatch, PathInfo } from "../batch/batch-index.js";
import type { Aggregation } from "./config.js";
import type { TokenTable } from "./token-table.js";

/**
 * Loss weight per unique trainable token (the worker minimises Σ weight · ℓ_token). `included(u)` says whether the
 * token's rollout is trained on; excluded tokens get 0 and are left out of every denominator.
 *
 * - token-mean: every unique token of the batch weighs 1/N (shared-prefix tokens counted once).
 * - sequence-mean: every trajectory (root-to-leaf path) weighs 1/P, spread evenly over its trainable tokens; a token
 *   shared by several paths collects a share from each (the flat-layout GRPO objective, written once per token).
 * - prompt-equal: every rollout weighs 1/R, spread evenly over its unique tokens, however many paths or segments its
 *   trajectory was split into (Dressage-style: splitting gives no extra weight).
 * - token-sum: every unique token weighs 1/sumNormalizer (Dr. GRPO's constant normaliser).
 */
export function uniqueTokenWeights(built: BuiltBatch, table: TokenTable, aggregation: Aggregation, included: (u: number) => boolean, sumNormalizer = 1): Float32Array {
  const w = new Float32Array(table.size);
  const rolloutOf = (u: number): string => built.index.calls[table.callOf[u] as number]?.rolloutId ?? "";
  if (aggregation === "token-mean" || aggregation === "token-sum") {
    let n = 0;
    for (let u = 0; u < table.size; u++) if (included(u)) n++;
    const each = aggregation === "token-mean" ? (n === 0 ? 0 : 1 / n) : 1 / sumNormalizer;
    for (let u = 0; u < table.size; u++) if (included(u)) w[u] = each;
    return w;
  }
  if (aggregation === "prompt-equal") {
    const perRollout = new Map<string, number>();
    for (let u = 0; u < table.size; u++) if (included(u)) perRollout.set(rolloutOf(u), (perRollout.get(rolloutOf(u)) ?? 0) + 1);
    const r = perRollout.size;
    for (let u = 0; u < table.size; u++) if (included(u)) w[u] = 1 / (r * (perRollout.get(rolloutOf(u)) as number));
    return w;
  }
  // sequence-mean: paths partition across copies (each path lives in one row), so summing each copy's path shares
  // gives Σ over all paths through the token.
  const paths = built.index.paths;
  const counted = paths.filter((p) => p.trainableTokens > 0 && pathIncluded(p, built, table, included));
  const P = counted.length;
  if (P === 0) return w;
  const countedIds = new Set(counted.map((p) => p.id));
  built.batch.rows.forEach((row, r) => {
    const ix = built.index.rows[r];
    const uids = table.uid[r];
    if (!ix || !uids) return;
    const cache = new Map<number, number>();
    for (let i = 0; i < row.tokens.length; i++) {
      const u = uids[i] as number;
      if (u < 0 || !included(u)) continue;
      const set = ix.pathSet[i] as number;
      let share = cache.get(set);
      if (share === undefined) {
        share = 0;
        for (const pid of ix.pathSets[set] ?? []) if (countedIds.has(pid)) share += 1 / (P * (paths[pid] as PathInfo).trainableTokens);
        cache.set(set, share);
      }
      w[u] = (w[u] as number) + share;
    }
  });
  return w;
}

function pathIncluded(p: PathInfo, built: BuiltBatch, table: TokenTable, included: (u: number) => boolean): boolean {
  // A path's tokens all belong to its rollout; test its leaf token (or any trainable token on it).
  const row = built.batch.rows[p.row];
  const uids = table.uid[p.row];
  if (!row || !uids) return false;
  for (let i = p.leafToken; i >= 0; i = row.parent[i] as number) {
    const u = uids[i] as number;
    if (u >= 0) return included(u);
  }
  return false;
}
