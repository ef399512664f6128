import type { CallRecord } from "../store/records.js";
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
  process: Float32Array | null;
}

export type CallLookup = (tree: SessionTree, callId: string) => CallData;

const ROLE_INDEX = new Map(TOKEN_ROLES.map((r, i) => [r, i]));

/** Accumulates one row of a packed batch plus its side index. Rows grow by whole radix nodes. */
export class RowWriter {
  private readonly tokens: number[] = [];
  private readonly parent: number[] = [];
  private readonly positions: number[] = [];
  private readonly trainable: number[] = [];
  private readonly oldLogprobs: number[] = [];
  private readonly policyVersion: number[] = [];
  private readonly lossWeights: number[] = [];
  private readonly action: number[] = [];
  private readonly args: number[] = [];
  private readonly call: number[] = [];
  private readonly offset: number[] = [];
  private readonly role: number[] = [];
  private readonly pathSet: number[] = [];
  private readonly processReward: number[] = [];
  readonly pathSets: number[][] = [];
  /** Trainable tokens emitted (each unique token once). */
  trainableCount = 0;

  get length(): number {
    return this.tokens.length;
  }

  addPathSet(paths: number[]): number {
    this.pathSets.push(paths);
    return this.pathSets.length - 1;
  }

  /**
   * Appends node `id` of `tree`. Its first token's parent is `parentIndex` (-1 for a tree root), later tokens chain.
   * `weight` is the loss weight of its trainable tokens (the number of paths through it in this row). Returns the index
   * of the node's last token.
   */
  pushNode(tree: SessionTree, id: number, parentIndex: number, weight: number, pathSet: number, lookup: CallLookup): number {
    const node = tree.nodes[id] as TreeNode;
    const owner = node.callId === null ? null : lookup(tree, node.callId);
    const sampled = node.role === "sampled" && owner !== null;
    const roleIdx = ROLE_INDEX.get(node.role) as number;
    const logprobs = owner?.record.logprobs;
    const version = owner?.record.policyVersion ?? -1;
    let prev = parentIndex;
    for (let i = 0; i < node.end - node.start; i++) {
      const at = this.tokens.length;
      const o = sampled ? node.sampleOffset + i : -1;
      const lp = sampled ? logprobs?.[o] : undefined;
      const train = sampled && prev >= 0 && lp !== undefined && Number.isFinite(lp);
      this.tokens.push(node.src[node.start + i] as number);
      this.parent.push(prev);
      this.positions.push(node.depth + i);
      this.trainable.push(train ? 1 : 0);
      this.oldLogprobs.push(train ? (lp as number) : 0);
      this.policyVersion.push(sampled ? version : -1);
      this.lossWeights.push(train ? weight : 0);
      this.action.push(sampled ? (owner.action?.[o] ?? 0) : 0);
      this.args.push(sampled ? (owner.args?.[o] ?? 0) : 0);
      this.call.push(owner?.ref ?? -1);
      this.offset.push(o);
      this.role.push(roleIdx);
      this.pathSet.push(pathSet);
      this.processReward.push(sampled ? (owner.process?.[o] ?? 0) : 0);
      if (train) this.trainableCount++;
      prev = at;
    }
    return prev;
  }

  finish(): { row: PackedRow; index: RowIndex } {
    const row: PackedRow = {
      tokens: Int32Array.from(this.tokens),
      parent: Int32Array.from(this.parent),
      positions: Int32Array.from(this.positions),
      trainable: Uint8Array.from(this.trainable),
      oldLogprobs: Float32Array.from(this.oldLogprobs),
      policyVersion: Int32Array.from(this.policyVersion),
      advantages: new Float32Array(this.tokens.length),
      lossWeights: Float32Array.from(this.lossWeights),
      actionMask: Uint8Array.from(this.action),
      argsMask: Uint8Array.from(this.args),
    };
    const index: RowIndex = {
      call: Int32Array.from(this.call),
      offset: Int32Array.from(this.offset),
      role: Uint8Array.from(this.role),
      pathSet: Int32Array.from(this.pathSet),
      pathSets: this.pathSets,
      processReward: Float32Array.from(this.processReward),
    };
    return { row, index };
  }
}
