import type { BuiltBatch, CallRef, PathInfo } from "./batch-index.js";

/** Everything an advantage estimator may key on for one trainable token. */
export interface AdvantageSlot {
  row: number;
  /** Token index in the row. */
  token: number;
  call: CallRef;
  /** Offset in the call's completion (the token's position among the call's sampled tokens). */
  offset: number;
  /** Paths (trajectories) that contain the token: one in the flat layout, every leaf below it in the tree layout. */
  paths: readonly PathInfo[];
}

/**
 * The hook between batches and advantage estimators: calls `estimate` once per trainable token and writes the result
 * into `row.advantages`. Context tokens keep advantage 0. Returns the number of tokens written.
 */
export function fillAdvantages(built: BuiltBatch, estimate: (slot: AdvantageSlot) => number): number {
  let written = 0;
  const { batch, index } = built;
  batch.rows.forEach((row, r) => {
    const ix = index.rows[r];
    if (!ix) return;
    const pathCache = new Map<number, PathInfo[]>();
    for (let i = 0; i < row.tokens.length; i++) {
      if (row.trainable[i] !== 1) continue;
      const set = ix.pathSet[i] as number;
      let paths = pathCache.get(set);
      if (!paths) {
        paths = (ix.pathSets[set] ?? []).map((p) => index.paths[p] as PathInfo);
        pathCache.set(set, paths);
      }
      const call = index.calls[ix.call[i] as number] as CallRef;
      row.advantages[i] = estimate({ row: r, token: i, call, offset: ix.offset[i] as number, paths });
      written++;
    }
  });
  return written;
}
