import type { BuiltBatch } from "../batch/batch-index.js";
import { UserError } from "../core/errors.js";
import type { PpoConfig } from "./config.js";
import type { TokenTable } from "./token-table.js";

export interface GaeInput {
  built: BuiltBatch;
  table: TokenTable;
  /** Per row, the critic's V for each token (V of the state in which the token was chosen), as `criticValues` returns. */
  values: readonly Float32Array[];
  config: Pick<PpoConfig, "gamma" | "lambda">;
  /** Whether a path's rollout is trained on; paths of excluded rollouts are skipped. */
  includedRollout: (rolloutId: string) => boolean;
  /** Outcome reward of a rollout, placed on the last trainable token of each of its paths. */
  outcome: (rolloutId: string) => number;
  /** Extra reward on a unique token (process rewards at their decision's last token); 0 where none. */
  tokenReward: (uid: number) => number;
}

export interface GaeResult {
  /** Per unique token: mean advantage over the paths through it (NaN-free; 0 for tokens on no included path). */
  advantages: Float32Array;
  returns: Float32Array;
  /** Per unique token: the number of included paths through it (0 = not trained). */
  paths: Int32Array;
  /** V per unique token (as read from the first copy). */
  values: Float32Array;
}

/**
 * GAE along every root-to-leaf path of a tree batch. Steps are the path's trainable (policy-sampled) tokens only:
 * context tokens between them (tool output, user turns) are not time steps, so γ and λ discount per sampled token and
 * the critic's values on context tokens are never read. At step t with next step t′ on the same path:
 * δ_t = r_t + γ·V(t′) − V(t) (V(t′) = 0 after the last step), A_t = δ_t + γλ·A_{t′}, return R_t = A_t + V(t).
 * A token on several paths (a shared prefix) gets the mean of its per-path advantages and returns.
 */
export function treeGae(input: GaeInput): GaeResult {
  const { built, table, values, config } = input;
  const rows = built.batch.rows;
  if (values.length !== rows.length) throw new UserError("invalid_values", `critic values: ${values.length} rows for a batch of ${rows.length}`);
  rows.forEach((row, r) => {
    if ((values[r] as Float32Array).length !== row.tokens.length) throw new UserError("invalid_values", `critic values: row ${r} has ${(values[r] as Float32Array).length} values for ${row.tokens.length} tokens`);
  });
  const sumA = new Float64Array(table.size);
  const sumR = new Float64Array(table.size);
  const count = new Int32Array(table.size);
  const value = new Float32Array(table.size);
  const steps: number[] = [];
  for (const p of built.index.paths) {
    if (!input.includedRollout(p.rolloutId)) continue;
    const row = rows[p.row];
    const uids = table.uid[p.row];
    const v = values[p.row];
    if (!row || !uids || !v) continue;
    steps.length = 0;
    for (let i = p.leafToken; i >= 0; i = row.parent[i] as number) if ((uids[i] as number) >= 0) steps.push(i);
    // steps run leaf → root, which is the order GAE accumulates in.
    let nextV = 0;
    let gae = 0;
    steps.forEach((i, j) => {
      const u = uids[i] as number;
      const vt = v[i] as number;
      const reward = (j === 0 ? input.outcome(p.rolloutId) : 0) + input.tokenReward(u);
      const delta = reward + config.gamma * nextV - vt;
      gae = delta + config.gamma * config.lambda * gae;
      sumA[u] = (sumA[u] as number) + gae;
      sumR[u] = (sumR[u] as number) + gae + vt;
      count[u] = (count[u] as number) + 1;
      value[u] = vt;
      nextV = vt;
    });
  }
  const advantages = new Float32Array(table.size);
  const returns = new Float32Array(table.size);
  for (let u = 0; u < table.size; u++) {
    const c = count[u] as number;
    if (c === 0) continue;
    advantages[u] = (sumA[u] as number) / c;
    returns[u] = (sumR[u] as number) / c;
  }
  return { advantages, returns, paths: count, values: value };
}
