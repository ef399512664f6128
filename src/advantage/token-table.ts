import type { BuiltBatch } from "../batch/batch-index.js";

/**
 * Unique trainable tokens of a batch. A sampled token is identified by (call, completion offset); the flat layout
 * repeats shared-prefix tokens once per path and a tree split over several rows repeats them per row. Estimators work on
 * unique tokens and then write every copy, so both layouts train the same objective.
 */
export interface TokenTable {
  /** Unique trainable tokens. */
  size: number;
  /** Per row, per token: unique id, or -1 for tokens that are not trainable. */
  uid: Int32Array[];
  /** Unique id → index into BatchIndex.calls. */
  callOf: Int32Array;
  /** Unique id → offset in the call's completion. */
  offsetOf: Int32Array;
  /** Unique id → number of copies in the batch. */
  copies: Int32Array;
}

export function buildTokenTable(built: BuiltBatch): TokenTable {
  const { batch, index } = built;
  // Pass 1: completion length seen per call, to give each call a contiguous id range.
  const maxOffset = new Int32Array(index.calls.length).fill(-1);
  batch.rows.forEach((row, r) => {
    const ix = index.rows[r];
    if (!ix) return;
    for (let i = 0; i < row.tokens.length; i++) {
      if (row.trainable[i] !== 1) continue;
      const c = ix.call[i] as number;
      const o = ix.offset[i] as number;
      if (o > (maxOffset[c] as number)) maxOffset[c] = o;
    }
  });
  const base = new Int32Array(index.calls.length);
  let span = 0;
  for (let c = 0; c < base.length; c++) {
    base[c] = span;
    span += (maxOffset[c] as number) + 1;
  }
  // Pass 2: dense ids in first-seen order.
  const dense = new Int32Array(span).fill(-1);
  const callOf: number[] = [];
  const offsetOf: number[] = [];
  const copies: number[] = [];
  const uid = batch.rows.map((row, r) => {
    const out = new Int32Array(row.tokens.length).fill(-1);
    const ix = index.rows[r];
    if (!ix) return out;
    for (let i = 0; i < row.tokens.length; i++) {
      if (row.trainable[i] !== 1) continue;
      const c = ix.call[i] as number;
      const o = ix.offset[i] as number;
      const k = (base[c] as number) + o;
      let u = dense[k] as number;
      if (u < 0) {
        u = callOf.length;
        dense[k] = u;
        callOf.push(c);
        offsetOf.push(o);
        copies.push(0);
      }
      copies[u] = (copies[u] as number) + 1;
      out[i] = u;
    }
    return out;
  });
  return { size: callOf.length, uid, callOf: Int32Array.from(callOf), offsetOf: Int32Array.from(offsetOf), copies: Int32Array.from(copies) };
}
