import type { TokenRole, TreeCall, TreeNode } from "./types.js";

/** Where a walk stopped: inside `node` after `offset` tokens of its run, having consumed `consumed` input tokens. */
export interface WalkResult {
  node: number;
  offset: number;
  consumed: number;
  /** Nodes fully matched, in order (root excluded). */
  path: number[];
}

export function nodeLength(n: TreeNode): number {
  return n.end - n.start;
}

export function newRoot(): TreeNode {
  return { id: 0, parent: -1, children: new Map(), src: [], start: 0, end: 0, depth: 0, role: "prompt", callId: null, sampleOffset: -1, endsCalls: [], promptEnds: [] };
}

function at(n: TreeNode, i: number): number {
  return n.src[n.start + i] as number;
}

/**
 * Follows `seq[lo..hi)` down from `from` (which must be entered at its end) as far as the tokens match. Comparison is
 * token-wise over the whole run: nothing is trusted from record metadata.
 */
export function walk(nodes: TreeNode[], from: number, seq: readonly number[], lo: number, hi: number): WalkResult {
  let node = from;
  let pos = lo;
  const path: number[] = [];
  while (pos < hi) {
    const child = (nodes[node] as TreeNode).children.get(seq[pos] as number);
    if (child === undefined) break;
    const c = nodes[child] as TreeNode;
    const len = nodeLength(c);
    let k = 1; // first token matched by the children key
    const limit = Math.min(len, hi - pos);
    const src = c.src;
    const base = c.start;
    while (k < limit && src[base + k] === seq[pos + k]) k++;
    pos += k;
    if (k < len) return { node: child, offset: k, consumed: pos - lo, path };
    path.push(child);
    node = child;
  }
  const n = nodes[node] as TreeNode;
  return { node, offset: nodeLength(n), consumed: pos - lo, path };
}

/**
 * Splits `id` after `k` tokens (0 < k < length). The head keeps the id (so ancestors' ids stay valid); the tail gets a
 * new id and takes over children and the calls that end at the old end.
 */
export function split(nodes: TreeNode[], calls: TreeCall[], id: number, k: number): void {
  const n = nodes[id] as TreeNode;
  const tailId = nodes.length;
  const tail: TreeNode = {
    id: tailId,
    parent: id,
    children: n.children,
    src: n.src,
    start: n.start + k,
    end: n.end,
    depth: n.depth + k,
    role: n.role,
    callId: n.callId,
    sampleOffset: n.sampleOffset < 0 ? -1 : n.sampleOffset + k,
    endsCalls: n.endsCalls,
    promptEnds: n.promptEnds,
  };
  nodes.push(tail);
  for (const child of tail.children.values()) (nodes[child] as TreeNode).parent = tailId;
  for (const ci of tail.endsCalls) (calls[ci] as TreeCall).endNode = tailId;
  for (const ci of tail.promptEnds) (calls[ci] as TreeCall).promptEndNode = tailId;
  n.end = n.start + k;
  n.children = new Map([[at(tail, 0), tailId]]);
  n.endsCalls = [];
  n.promptEnds = [];
}

/** Makes the walk's stopping point a node boundary; returns the node that ends there. */
export function boundary(nodes: TreeNode[], calls: TreeCall[], w: WalkResult): number {
  const n = nodes[w.node] as TreeNode;
  if (w.offset < nodeLength(n)) split(nodes, calls, w.node, w.offset);
  return w.node;
}

/** Appends `seq[lo..hi)` as a new child of `parent` (which must end at the insertion point); returns its id. */
export function append(nodes: TreeNode[], parent: number, seq: readonly number[], lo: number, hi: number, role: TokenRole, callId: string, sampleOffset: number): number {
  const p = nodes[parent] as TreeNode;
  const id = nodes.length;
  nodes.push({ id, parent, children: new Map(), src: seq, start: lo, end: hi, depth: p.depth + nodeLength(p), role, callId, sampleOffset, endsCalls: [], promptEnds: [] });
  p.children.set(seq[lo] as number, id);
  return id;
}

/** Node ids from the root's child down to `id` (root excluded). */
export function pathTo(nodes: TreeNode[], id: number): number[] {
  const out: number[] = [];
  for (let n = id; n > 0; n = (nodes[n] as TreeNode).parent) out.push(n);
  return out.reverse();
}

/** Concatenated tokens from the root to the end of `id`. */
export function tokensTo(nodes: TreeNode[], id: number): number[] {
  const out: number[] = [];
  for (const n of pathTo(nodes, id)) {
    const node = nodes[n] as TreeNode;
    for (let i = node.start; i < node.end; i++) out.push(node.src[i] as number);
  }
  return out;
}
