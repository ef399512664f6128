import { describe, expect, it } from "vitest";
import { PACKED_BATCH_VERSION, type PackedBatch, type PackedRow } from "../../src/batch/types.js";
import { setTokenMeanWeights, splitMinibatches } from "../../src/train/micro-batches.js";

function row(trainable: number[]): PackedRow {
  const n = trainable.length;
  return {
    tokens: Int32Array.from(trainable.map((_, i) => i)),
    parent: Int32Array.from(trainable.map((_, i) => i - 1)),
    positions: Int32Array.from(trainable.map((_, i) => i)),
    trainable: Uint8Array.from(trainable),
    oldLogprobs: new Float32Array(n),
    policyVersion: new Int32Array(n),
    advantages: new Float32Array(n),
    lossWeights: new Float32Array(n),
    actionMask: new Uint8Array(n),
    argsMask: new Uint8Array(n),
  };
}

const sum = (rows: PackedRow[]): number => rows.reduce((a, r) => a + r.lossWeights.reduce((x, w) => x + w, 0), 0);

describe("minibatches: several optimizer steps per training step", () => {
  const batch: PackedBatch = { version: PACKED_BATCH_VERSION, meta: {}, rows: [row([0, 1, 1, 1]), row([0, 1]), row([0, 1, 1]), row([0, 1, 1, 1, 1]), row([0, 1])] };
  setTokenMeanWeights(batch);

  it("one minibatch is the batch itself", () => {
    expect(splitMinibatches(batch, 1)).toEqual([batch]);
  });

  it("rows keep their order, split by trainable tokens (3+1 | 2+4 | 1 of 11 → bins by the running share)", () => {
    const parts = splitMinibatches(batch, 3);
    expect(parts.map((p) => p.rows.map((r) => r.tokens.length))).toEqual([[4, 2], [3, 5], [2]]);
  });

  it("each minibatch's loss weights sum to the whole batch's, so token-mean stays a mean within it", () => {
    expect(sum(batch.rows)).toBeCloseTo(1, 6);
    for (const p of splitMinibatches(batch, 3)) {
      expect(sum(p.rows)).toBeCloseTo(1, 6);
      const w = p.rows.flatMap((r) => [...r.lossWeights].filter((_, i) => r.trainable[i] === 1));
      expect(new Set(w.map((x) => x.toFixed(6))).size).toBe(1);
    }
    // The input batch is not modified.
    expect(sum(batch.rows)).toBeCloseTo(1, 6);
  });

  it("never makes more minibatches than rows, and none empty", () => {
    const parts = splitMinibatches(batch, 10);
    expect(parts.length).toBeLessThanOrEqual(5);
    expect(parts.every((p) => p.rows.length > 0)).toBe(true);
    expect(parts.flatMap((p) => p.rows).length).toBe(5);
  });
});
