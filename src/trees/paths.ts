import { pathTo } from "./radix.js";
import type { SessionTree, TreeCall, TreeNode } from "./types.js";

/** One root-to-leaf path of a session tree: what one flat training row holds. */
export interface TreePath {
  tree: SessionTree;
  leafNode: number;
  /** The latest kept call whose prompt + completion ends at the leaf (the path is exactly its prompt + completion). */
  leafCall: TreeCall;
  /** Node ids root → leaf (root excluded). */
  nodes: number[];
  /** Kept calls that end on this path, shallowest first. */
  calls: TreeCall[];
  length: number;
}

/** Marks the nodes on the path of every kept call (all calls when `kept` is omitted). */
export function markKept(tree: SessionTree, kept?: ReadonlySet<number>): Uint8Array {
  const mark = new Uint8Array(tree.nodes.length);
  mark[0] = 1;
  for (const c of tree.calls) {
    if (kept && !kept.has(c.index)) continue;
    for (let n = c.endNode; n > 0 && mark[n] === 0; n = (tree.nodes[n] as TreeNode).parent) mark[n] = 1;
  }
  return mark;
}

/** Root-to-leaf paths over the kept part of the tree, in depth-first order (children by node id = insertion order). */
export function treePaths(tree: SessionTree, kept?: ReadonlySet<number>): TreePath[] {
  const mark = markKept(tree, kept);
  const out: TreePath[] = [];
  const visit = (id: number): void => {
    const node = tree.nodes[id] as TreeNode;
    const kids = [...node.children.values()].filter((c) => mark[c] === 1).sort((a, b) => a - b);
    if (kids.length === 0 && id !== 0) {
      const nodes = pathTo(tree.nodes, id);
      const calls: TreeCall[] = [];
      for (const n of nodes) for (const ci of (tree.nodes[n] as TreeNode).endsCalls) if (!kept || kept.has(ci)) calls.push(tree.calls[ci] as TreeCall);
      const leafCall = calls[calls.length - 1];
      if (leafCall) out.push({ tree, leafNode: id, leafCall, nodes, calls, length: node.depth + node.end - node.start });
      return;
    }
    for (const k of kids) visit(k);
  };
  visit(0);
  return out;
}

/** Per-token view of one path: what the flat layout emits and what the property tests compare against. */
export interface PathTokens {
  tokens: number[];
  /** Node id of each token. */
  node: number[];
}

export function pathTokens(tree: SessionTree, nodes: readonly number[]): PathTokens {
  const tokens: number[] = [];
  const node: number[] = [];
  for (const id of nodes) {
    const n = tree.nodes[id] as TreeNode;
    for (let i = n.start; i < n.end; i++) {
      tokens.push(n.src[i] as number);
      node.push(id);
    }
  }
  return { tokens, node };
}
