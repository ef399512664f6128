import type { TreePath } from "../trees/paths.js";
import type { SessionTree, TreeNode } from "../trees/types.js";
import type { PathInfo, RowIndex } from "./batch-index.js";
import type { CallLookup } from "./row-writer.js";
import { RowWriter } from "./row-writer.js";
import type { PackedRow } from "./types.js";

/** The kept paths of one session tree, each with its PathInfo (row / leafToken / trainableTokens are filled here). */
export interface TreeUnitInput {
  tree: SessionTree;
  paths: { path: TreePath; info: PathInfo }[];
}

export interface LayoutResult {
  rows: PackedRow[];
  index: RowIndex[];
  oversizePaths: number;
  /** Root context tokens reused from another tree in the same row (tree layout). */
  sharedRootTokens: number;
}

function nodeLen(tree: SessionTree, id: number): number {
  const n = tree.nodes[id] as TreeNode;
  return n.end - n.start;
}

/** Baseline: one row per root-to-leaf path, parent[i] = i − 1. Shared prefixes are repeated in every row. */
export function flatLayout(inputs: readonly TreeUnitInput[], lookup: CallLookup, budget: number): LayoutResult {
  const rows: PackedRow[] = [];
  const index: RowIndex[] = [];
  let oversizePaths = 0;
  for (const { tree, paths } of inputs) {
    for (const { path, info } of paths) {
      const w = new RowWriter(path.length);
      const set = w.addPathSet([info.id]);
      let prev = -1;
      for (const id of path.nodes) prev = w.pushNode(tree, id, prev, 1, set, lookup);
      if (path.length > budget) oversizePaths++;
      info.row = rows.length;
      info.leafToken = prev;
      info.trainableTokens = w.trainableCount;
      const done = w.finish();
      rows.push(done.row);
      index.push(done.index);
    }
  }
  return { rows, index, oversizePaths, sharedRootTokens: 0 };
}

interface Group {
  tree: SessionTree;
  paths: { path: TreePath; info: PathInfo }[];
  tokens: number;
}

/** Splits a tree's paths (in depth-first order) into groups whose union of tokens fits the budget. */
function groupPaths(input: TreeUnitInput, budget: number): { groups: Group[]; oversize: number } {
  const groups: Group[] = [];
  let oversize = 0;
  let cur: Group = { tree: input.tree, paths: [], tokens: 0 };
  let seen = new Set<number>();
  for (const p of input.paths) {
    let add = 0;
    for (const id of p.path.nodes) if (!seen.has(id)) add += nodeLen(input.tree, id);
    if (cur.paths.length > 0 && cur.tokens + add > budget) {
      groups.push(cur);
      cur = { tree: input.tree, paths: [], tokens: 0 };
      seen = new Set();
      add = p.path.length;
    }
    if (p.path.length > budget) oversize++;
    for (const id of p.path.nodes) seen.add(id);
    cur.paths.push(p);
    cur.tokens += add;
  }
  if (cur.paths.length > 0) groups.push(cur);
  return { groups, oversize };
}

/** Writes one group: every node once, parents before children; a node's loss weight = paths through it. Returns shared root tokens. */
function writeGroup(w: RowWriter, g: Group, rowIndex: number, lookup: CallLookup, shareRoots: boolean): number {
  let shared = 0;
  const through = new Map<number, number[]>();
  for (const { path, info } of g.paths) {
    for (const id of path.nodes) {
      const list = through.get(id);
      if (list) list.push(info.id);
      else through.set(id, [info.id]);
    }
  }
  const last = new Map<number, number>();
  const trainable = new Map<number, number>();
  // Context nodes reached from the root through context only: shareable with other trees' chains in the row.
  const chained = new Set<number>();
  for (const { path, info } of g.paths) {
    let count = 0;
    for (const id of path.nodes) {
      let end = last.get(id);
      if (end === undefined) {
        const node = g.tree.nodes[id] as TreeNode;
        const paths = through.get(id) as number[];
        const before = w.trainableCount;
        const root = node.parent <= 0;
        if (shareRoots && (root || (node.role !== "sampled" && chained.has(node.parent)))) {
          const r = w.pushRootNode(g.tree, id, paths.length, w.addPathSet(paths), lookup, root ? -1 : (last.get(node.parent) as number));
          end = r.end;
          shared += r.shared;
          if (node.role !== "sampled") chained.add(id);
        } else {
          const parentIndex = root ? -1 : (last.get(node.parent) as number);
          end = w.pushNode(g.tree, id, parentIndex, paths.length, w.addPathSet(paths), lookup);
        }
        last.set(id, end);
        trainable.set(id, w.trainableCount - before);
      }
      count += trainable.get(id) as number;
    }
    info.row = rowIndex;
    info.leafToken = last.get(path.leafNode) as number;
    info.trainableTokens = count;
  }
  return shared;
}

const ROOT_KEY_TOKENS = 512;

/** The first tokens of a group's first path, across nodes: a root can be a few tokens long (see pushRootNode). */
function rootKey(g: Group): Int32Array {
  const out: number[] = [];
  for (const id of g.paths[0]?.path.nodes ?? []) {
    const node = g.tree.nodes[id] as TreeNode;
    for (let i = node.start; i < node.end && out.length < ROOT_KEY_TOKENS; i++) out.push(node.src[i] as number);
    if (out.length >= ROOT_KEY_TOKENS) break;
  }
  return Int32Array.from(out);
}

/** The tokens of a group's root chains that writeGroup would share with chains already in row `w`. */
function sharedContextTokens(w: RowWriter, g: Group): number {
  // Row index of each fully shared chained node's last token: only a fully shared parent lets its child match.
  const at = new Map<number, number>();
  const seen = new Set<number>();
  let shared = 0;
  for (const { path } of g.paths) {
    for (const id of path.nodes) {
      if (seen.has(id)) continue;
      seen.add(id);
      const node = g.tree.nodes[id] as TreeNode;
      const from = node.parent <= 0 ? -1 : at.get(node.parent);
      if (from === undefined || node.role === "sampled") continue;
      const m = w.matchContext(g.tree, id, from);
      shared += m.shared;
      if (m.shared === node.end - node.start) at.set(id, m.prev);
    }
  }
  return shared;
}

function compareKeys(a: Int32Array, b: Int32Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  return a.length - b.length;
}

/**
 * Tree-packed: each unique token of a session tree once, with parent pointers and depth positions, several trees per
 * row first-fit up to `budget` tokens; with `shareRoots`, trees in a row also share identical root context (system
 * prompt, task; every context node reached from the root through context only) token for token, and a tree counts against the budget only with the tokens it adds. A tree larger than the budget is split into groups of paths (shared prefixes
 * repeat across groups); a single path longer than the budget gets a row of its own.
 */
export function treeLayout(inputs: readonly TreeUnitInput[], lookup: CallLookup, budget: number, shareRoots = true): LayoutResult {
  const groups: Group[] = [];
  let oversizePaths = 0;
  for (const input of inputs) {
    const g = groupPaths(input, budget);
    groups.push(...g.groups);
    oversizePaths += g.oversize;
  }
  // Trees that start with the same context (one harness's system prompt, one task's prompt) go next to each other,
  // so first-fit puts them in the same row where their root tokens are shared. The sort is stable: deterministic.
  if (shareRoots) {
    const keys = new Map(groups.map((g) => [g, rootKey(g)]));
    groups.sort((a, b) => compareKeys(keys.get(a) as Int32Array, keys.get(b) as Int32Array));
  }
  const writers: RowWriter[] = [];
  let sharedRootTokens = 0;
  for (const g of groups) {
    // A group costs a row only the tokens it adds: with shared roots, a GRPO group's long prompt is counted once.
    const adds = (w: RowWriter): number => g.tokens - (shareRoots ? sharedContextTokens(w, g) : 0);
    let r = writers.findIndex((w) => w.length + adds(w) <= budget);
    if (r < 0) {
      writers.push(new RowWriter(Math.min(Math.max(budget, g.tokens), Math.max(g.tokens, 1 << 20))));
      r = writers.length - 1;
    }
    sharedRootTokens += writeGroup(writers[r] as RowWriter, g, r, lookup, shareRoots);
  }
  const rows: PackedRow[] = [];
  const index: RowIndex[] = [];
  for (const w of writers) {
    const done = w.finish();
    rows.push(done.row);
    index.push(done.index);
  }
  return { rows, index, oversizePaths, sharedRootTokens };
}
