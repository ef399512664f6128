import type { BreakKind } from "../icr/records.js";
import type { FilterStats } from "../trees/filter.js";
import type { BranchLabel, TokenRole } from "../trees/types.js";
import type { PackedBatch } from "./types.js";

/** One root-to-leaf path (trajectory) and where it lies in the batch. */
export interface PathInfo {
  id: number;
  rolloutId: string;
  sessionId: string;
  leafCallId: string;
  /** Calls ending on the path, shallowest first. */
  callIds: string[];
  /** Label of the leaf call's segment. */
  label: BranchLabel;
  row: number;
  /** Index in the row of the path's last token: follow `parent` from here to the root to read the whole path. */
  leafToken: number;
  length: number;
  trainableTokens: number;
  outcomeReward: number;
}

/** A call that owns tokens in the batch. */
export interface CallRef {
  callId: string;
  sessionId: string;
  rolloutId: string;
  policyVersion: number | null;
}

/** Side table per row (not sent to the worker): where each token came from, for advantages and reward shaping. */
export interface RowIndex {
  /** Index into BatchIndex.calls: the call that sampled the token, or that introduced it as context. */
  call: Int32Array;
  /** Offset in that call's completion for sampled tokens, -1 for context. */
  offset: Int32Array;
  /** Index into TOKEN_ROLES. */
  role: Uint8Array;
  /** Index into `pathSets`: the paths that contain the token. */
  pathSet: Int32Array;
  pathSets: number[][];
}

export interface BatchIndex {
  layout: "flat" | "tree";
  paths: PathInfo[];
  calls: CallRef[];
  rows: RowIndex[];
  roles: readonly TokenRole[];
}

export interface BatchStats {
  layout: "flat" | "tree";
  rollouts: number;
  sessions: number;
  calls: number;
  segments: number;
  rows: number;
  /** Root-to-leaf paths = branches. */
  paths: number;
  /** Tokens if every path were its own row. */
  flatTokens: number;
  /** Tokens of the kept trees counted once (the tree layout's size when no tree is split). */
  uniqueTokens: number;
  /** Root context tokens that trees packed into the same row shared (counted once); tree layout only. */
  sharedRootTokens: number;
  /** Tokens actually emitted in this batch's rows (tree layout: unique − shared, plus prefixes repeated by splits). */
  emittedTokens: number;
  /** uniqueTokens / flatTokens: ≤ 1/3 means the tree layout is at least 3× smaller. */
  dedupRatio: number;
  trainableTokens: number;
  /** Unique trainable tokens per policy version that sampled them ("-1" = unknown version). */
  trainableByPolicyVersion: Record<string, number>;
  /** Paths longer than the row token budget (each got a row of its own). */
  oversizePaths: number;
  breaks: Partial<Record<BreakKind, number>>;
  labels: Partial<Record<BranchLabel, number>>;
  parentDisagreements: number;
  filter: FilterStats;
}

export interface BuiltBatch {
  batch: PackedBatch;
  index: BatchIndex;
  stats: BatchStats;
}
