import type { PackedBatch, PackedRow } from "../../src/batch/types.js";
import { PACKED_BATCH_VERSION } from "../../src/batch/types.js";

/** Packs token paths into one row as a trie (shared prefixes once); also returns each path's token indices in the row. */
export function treeRow(paths: number[][]): { row: PackedRow; nodePaths: number[][] } {
  const tokens: number[] = [];
  const parent: number[] = [];
  const positions: number[] = [];
  const children = new Map<string, number>();
  const nodePaths = paths.map((path) => {
    let node = -1;
    return path.map((tok, depth) => {
      const key = `${node}:${tok}`;
      let idx = children.get(key);
      if (idx === undefined) {
        idx = tokens.length;
        children.set(key, idx);
        tokens.push(tok);
        parent.push(node);
        positions.push(depth);
      }
      node = idx;
      return idx;
    });
  });
  return { row: makeRow(tokens, parent, positions), nodePaths };
}

export function flatRow(path: number[]): PackedRow {
  return makeRow(
    path,
    path.map((_, i) => i - 1),
    path.map((_, i) => i),
  );
}

export function makeRow(tokens: number[], parent: number[], positions: number[]): PackedRow {
  const n = tokens.length;
  return {
    tokens: Int32Array.from(tokens),
    parent: Int32Array.from(parent),
    positions: Int32Array.from(positions),
    trainable: new Uint8Array(n),
    oldLogprobs: new Float32Array(n),
    policyVersion: new Int32Array(n).fill(-1),
    advantages: new Float32Array(n),
    lossWeights: new Float32Array(n),
    actionMask: new Uint8Array(n),
    argsMask: new Uint8Array(n),
  };
}

export function batch(rows: PackedRow[]): PackedBatch {
  return { version: PACKED_BATCH_VERSION, rows, meta: {} };
}

/** Deterministic pseudo-random token ids in [0, 265). */
export function tokensFrom(seed: number, n: number): number[] {
  let a = seed >>> 0;
  return Array.from({ length: n }, () => {
    a = (Math.imul(a, 1664525) + 1013904223) >>> 0;
    return a % 265;
  });
}

/** A chat-shaped tree: a shared prompt, two sampled branches, one of which branches again. */
export function branchingPaths(): number[][] {
  const prompt = [257, ...tokensFrom(1, 24), 258];
  const turn = tokensFrom(2, 10);
  return [
    [...prompt, ...turn, ...tokensFrom(3, 8)],
    [...prompt, ...turn, ...tokensFrom(4, 12)],
    [...prompt, ...tokensFrom(5, 15)],
  ];
}
