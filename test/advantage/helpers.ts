import type { BuiltBatch } from "../../src/batch/batch-index.js";
import { expect } from "vitest";

export interface TokenView {
  adv: number[];
  /** Σ loss weight over the token's copies. */
  weight: number;
  copies: number;
  returns: number[];
}

/** Trainable tokens keyed `callId:offset`, with every copy's advantage and the summed loss weight. */
export function byToken(built: BuiltBatch): Map<string, TokenView> {
  const out = new Map<string, TokenView>();
  built.batch.rows.forEach((row, r) => {
    const ix = built.index.rows[r];
    if (!ix) return;
    for (let i = 0; i < row.tokens.length; i++) {
      if (row.trainable[i] !== 1) {
        expect(row.advantages[i]).toBe(0);
        expect(row.lossWeights[i]).toBe(0);
        continue;
      }
      const key = `${built.index.calls[ix.call[i] as number]?.callId}:${ix.offset[i]}`;
      const v = out.get(key) ?? { adv: [], weight: 0, copies: 0, returns: [] };
      v.adv.push(row.advantages[i] as number);
      v.weight += row.lossWeights[i] as number;
      v.copies++;
      if (row.returns) v.returns.push(row.returns[i] as number);
      out.set(key, v);
    }
  });
  return out;
}

/** Expects `callId:offset` → [advantage, weight] for every listed token (each copy carries the same advantage). */
export function expectTokens(view: Map<string, TokenView>, expected: Record<string, [number, number]>, digits = 5): void {
  expect(new Set(view.keys())).toEqual(new Set(Object.keys(expected)));
  for (const [key, [adv, weight]] of Object.entries(expected)) {
    const v = view.get(key) as TokenView;
    for (const a of v.adv) expect(a, `advantage of ${key}`).toBeCloseTo(adv, digits);
    expect(v.weight, `weight of ${key}`).toBeCloseTo(weight, digits);
  }
}
