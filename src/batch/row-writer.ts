import type { CallRecord } from "../icr/records.js";
import type { SessionTree, TreeNode } from "../trees/types.js";
import { TOKEN_ROLES } from "../trees/types.js";
import type { RowIndex } from "./batch-index.js";
import type { PackedRow } from "./types.js";

/** What the writer needs to know about the call that owns a run of tokens. */
export interface CallData {
  /** Index into BatchIndex.calls. */
  ref: number;
  record: CallRecord;
  action: Uint8Array | null;
  args: Uint8Array | null;
}

export type CallLookup = (tree: SessionTree, callId: string) => CallData;

const ROLE_INDEX = new Map(TOKEN_ROLES.map((r, i) => [r, i]));

type Typed = Int32Array | Uint8Array | Float32Array;

/** One number per (parent index, token): token ids stay below 2^21 and rows below 2^31 tokens, so this is exact. */
function chainKey(parent: number, token: number): number {
  return (parent + 1) * 2 ** 21 + token;
}

function grow<T extends Typed>(a: T, size: number): T {
  if (size <= a.length) return a;
  const next = new (a.constructor as new (n: number) => T)(Math.max(size, a.length * 2));
  next.set(a);
  return next;
}

/**
 * Accumulates one row of a packed batch plus its side index. Rows grow by whole radix nodes into typed buffers
 * (doubling), which keeps millions of tokens off the JS heap and out of the garbage collector's way.
 */
export class RowWriter {
  private n = 0;
  private tokens: Int32Array;
  private parent: Int32Array;
  private positions: Int32Array;
  private trainable: Uint8Array;
  private oldLogprobs: Float32Array;
  private policyVersion: Int32Array;
  private lossWeights: Float32Array;
  private action: Uint8Array;
  private args: Uint8Array;
  private call: Int32Array;
  private offset: Int32Array;
  private role: Uint8Array;
  private pathSet: Int32Array;
  readonly pathSets: number[][] = [];
  /** (parent index, token) → index where a root context run starts or branches off another one. */
  private readonly rootChains = new Map<number, number>();
  /** 1 on tokens written by `pushRootNode` (shareable root context). */
  private rootChain: Uint8Array;
  /** Trainable tokens emitted (each unique token once). */
  trainableCount = 0;

  /** `capacity`: the expected row length; an exact guess avoids every regrowth and the final copy. */
  constructor(capacity = 1024) {
    const c = Math.max(1, capacity);
    this.tokens = new Int32Array(c);
    this.parent = new Int32Array(c);
    this.positions = new Int32Array(c);
    this.trainable = new Uint8Array(c);
    this.oldLogprobs = new Float32Array(c);
    this.policyVersion = new Int32Array(c);
    this.lossWeights = new Float32Array(c);
    this.action = new Uint8Array(c);
    this.args = new Uint8Array(c);
    this.call = new Int32Array(c);
    this.offset = new Int32Array(c);
    this.role = new Uint8Array(c);
    this.pathSet = new Int32Array(c);
    this.rootChain = new Uint8Array(c);
  }

  get length(): number {
    return this.n;
  }

  addPathSet(paths: number[]): number {
    this.pathSets.push(paths);
    return this.pathSets.length - 1;
  }

  private reserve(size: number): void {
    if (size <= this.tokens.length) return;
    this.tokens = grow(this.tokens, size);
    this.parent = grow(this.parent, size);
    this.positions = grow(this.positions, size);
    this.trainable = grow(this.trainable, size);
    this.oldLogprobs = grow(this.oldLogprobs, size);
    this.policyVersion = grow(this.policyVersion, size);
    this.lossWeights = grow(this.lossWeights, size);
    this.action = grow(this.action, size);
    this.args = grow(this.args, size);
    this.call = grow(this.call, size);
    this.offset = grow(this.offset, size);
    this.role = grow(this.role, size);
    this.pathSet = grow(this.pathSet, size);
    this.rootChain = grow(this.rootChain, size);
  }

  /**
   * Appends node `id` of `tree`. Its first token's parent is `parentIndex` (-1 for a tree root), later tokens chain.
   * `weight` is the loss weight of its trainable tokens (the number of paths through it in this row). Returns the index
   * of the node's last token.
   */
  pushNode(tree: SessionTree, id: number, parentIndex: number, weight: number, pathSet: number, lookup: CallLookup, from = 0): number {
    const node = tree.nodes[id] as TreeNode;
    const len = node.end - node.start;
    this.reserve(this.n + len - from);
    const owner = node.callId === null ? null : lookup(tree, node.callId);
    const sampled = node.role === "sampled" && owner !== null;
    const roleIdx = ROLE_INDEX.get(node.role) as number;
    const logprobs = owner?.record.logprobs;
    const version = sampled ? (owner.record.policyVersion ?? -1) : -1;
    const ref = owner?.ref ?? -1;
    const actionMask = sampled ? owner.action : null;
    const argsMask = sampled ? owner.args : null;
    const src = node.src;
    let prev = parentIndex;
    for (let i = from; i < len; i++) {
      const at = this.n++;
      const o = sampled ? node.sampleOffset + i : -1;
      const lp = sampled ? logprobs?.[o] : undefined;
      const train = sampled && prev >= 0 && lp !== undefined && Number.isFinite(lp);
      this.tokens[at] = src[node.start + i] as number;
      this.parent[at] = prev;
      this.positions[at] = node.depth + i;
      this.trainable[at] = train ? 1 : 0;
      this.oldLogprobs[at] = train ? (lp as number) : 0;
      this.policyVersion[at] = version;
      this.lossWeights[at] = train ? weight : 0;
      this.action[at] = actionMask?.[o] ?? 0;
      this.args[at] = argsMask?.[o] ?? 0;
      this.call[at] = ref;
      this.offset[at] = o;
      this.role[at] = roleIdx;
      this.pathSet[at] = pathSet;
      if (train) this.trainableCount++;
      prev = at;
    }
    return prev;
  }

  /**
   * Appends a context node of a tree's root chain (its root, or a context child of a chained node: a session whose
   * calls start from two system prompts shares only a few tokens at its root). It reuses the longest run of tokens
   * that another tree's chain already put in this row after the same parent at the same positions (sessions of a
   * GRPO group share their system prompt and task): those tokens are computed once for every tree in the row.
   * `parentIndex`: the row index of the chained parent's last token, -1 for a root. Sampled tokens are never shared
   * (each carries its own logprob and call).
   */
  pushRootNode(tree: SessionTree, id: number, weight: number, pathSet: number, lookup: CallLookup, parentIndex = -1): { end: number; shared: number } {
    const node = tree.nodes[id] as TreeNode;
    if (node.role === "sampled") return { end: this.pushNode(tree, id, parentIndex, weight, pathSet, lookup), shared: 0 };
    const len = node.end - node.start;
    const { shared: i, prev } = this.matchRoot(node, parentIndex);
    if (i === len) return { end: prev, shared: len };
    const start = this.n;
    const end = this.pushNode(tree, id, prev, weight, pathSet, lookup, i);
    this.rootChains.set(chainKey(prev, this.tokens[start] as number), start);
    this.rootChain.fill(1, start, end + 1);
    return { end, shared: i };
  }

  /**
   * What pushRootNode would share of a context node after `parentIndex`: the tokens and the row index of the last
   * shared one (0 and `parentIndex` for sampled nodes).
   */
  matchContext(tree: SessionTree, id: number, parentIndex = -1): { shared: number; prev: number } {
    const node = tree.nodes[id] as TreeNode;
    return node.role === "sampled" ? { shared: 0, prev: parentIndex } : this.matchRoot(node, parentIndex);
  }

  /** The longest run of a context node's tokens already in this row as root-chain context after `from`. */
  private matchRoot(node: TreeNode, from: number): { shared: number; prev: number } {
    const len = node.end - node.start;
    let prev = from;
    let i = 0;
    for (; i < len; i++) {
      const t = node.src[node.start + i] as number;
      // Root runs are contiguous, so the continuation is usually the next index; branch points are in the map.
      const j = prev + 1;
      let next: number | undefined;
      if (prev >= 0 && j < this.n && this.rootChain[j] === 1 && this.parent[j] === prev && this.tokens[j] === t) next = j;
      else next = this.rootChains.get(chainKey(prev, t));
      if (next === undefined) break;
      prev = next;
    }
    return { shared: i, prev };
  }

  finish(): { row: PackedRow; index: RowIndex } {
    const n = this.n;
    // Mostly-full buffers are handed over as views (no copy, little waste); sparse ones are copied to their length.
    const fit = <T extends Typed>(a: T): T => (a.length === n ? a : 2 * n >= a.length ? (a.subarray(0, n) as T) : (a.slice(0, n) as T));
    const row: PackedRow = {
      tokens: fit(this.tokens),
      parent: fit(this.parent),
      positions: fit(this.positions),
      trainable: fit(this.trainable),
      oldLogprobs: fit(this.oldLogprobs),
      policyVersion: fit(this.policyVersion),
      advantages: new Float32Array(n),
      lossWeights: fit(this.lossWeights),
      actionMask: fit(this.action),
      argsMask: fit(this.args),
    };
    const index: RowIndex = {
      call: fit(this.call),
      offset: fit(this.offset),
      role: fit(this.role),
      pathSet: fit(this.pathSet),
      pathSets: this.pathSets,
    };
    return { row, index };
  }
}
