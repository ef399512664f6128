import type { BreakKind, CallRecord, SessionInfo } from "../icr/records.js";

/**
 * What a branch of a session tree is. `main`: the agent's own trajectory; `sub-agent`: a session spawned by a call of
 * another session; `compaction`: a segment started by a compaction / dropped-turns break; `rewrite`: a segment started by
 * any other history rewrite (edited history, stripped reasoning, re-serialised tool calls, template instability);
 * `retry`: a call with exactly the prompt of an earlier call (regeneration); `side`: a new root that is not a sub-agent
 * (title generation, quota probes, fault handling).
 */
export type BranchLabel = "main" | "sub-agent" | "compaction" | "rewrite" | "retry" | "side";

export const BRANCH_LABELS: readonly BranchLabel[] = ["main", "sub-agent", "compaction", "rewrite", "retry", "side"];

/**
 * Which conversation a segment belongs to, whatever started it: a rewrite, compaction or retry continues the
 * conversation of the call it came from. A label says how a segment began; only the lineage says whose it is (Qwen
 * Code's memory agent re-renders its own history every call: those `rewrite` segments are still a side conversation).
 */
export type Lineage = "main" | "sub-agent" | "side";

/**
 * Where a context (non-sampled) token came from. `prompt`: the first prompt of a segment root (system, task, tools);
 * `tool_output`: tokens between a parent call that made tool calls and its child's prompt end; `user`: the same after a
 * parent without tool calls (a user / harness turn); `harness`: history re-rendered after a break.
 */
export type ContextKind = "prompt" | "tool_output" | "user" | "harness";

/** A token is either sampled by the policy (trainable) or context of one of the kinds above. */
export type TokenRole = "sampled" | ContextKind;

export const TOKEN_ROLES: readonly TokenRole[] = ["sampled", "prompt", "tool_output", "user", "harness"];

/**
 * A radix node: a run of tokens that every path through it shares. The run is a view into a record's token array
 * (`src[start..end)`), never a copy. All tokens of a node have the same role.
 */
export interface TreeNode {
  id: number;
  /** Parent node id; -1 for the virtual root (id 0, empty run). */
  parent: number;
  /** First token of each child's run → child node id. */
  children: Map<number, number>;
  src: readonly number[];
  start: number;
  end: number;
  /** Number of tokens before this node on its path = position id of its first token. */
  depth: number;
  role: TokenRole;
  /** Sampled: the call that sampled the run. Context: the call whose prompt introduced it. */
  callId: string | null;
  /** Sampled: index of the run's first token in the owner call's completion (and logprobs). -1 for context. */
  sampleOffset: number;
  /** Indices (into SessionTree.calls) of calls whose prompt + completion ends exactly at this node's end. */
  endsCalls: number[];
  /** Indices of calls whose prompt ends exactly at this node's end. */
  promptEnds: number[];
}

/** A token range [start, end) on a call's path (absolute positions = depth). */
export interface TokenSpan {
  start: number;
  end: number;
}

export interface InsertedSpan extends TokenSpan {
  kind: ContextKind;
}

export interface ParentDisagreement {
  callId: string;
  /** `parentCallId` as recorded by the proxy. */
  recorded: string | null;
  /** The parent found token-wise (deepest earlier call whose prompt + completion is a prefix of this prompt). */
  verified: string | null;
  reason: string;
}

export interface TreeCall {
  index: number;
  callId: string;
  record: CallRecord;
  /** Node whose end is this call's prompt end. */
  promptEndNode: number;
  /** Node whose end is this call's prompt + completion end. */
  endNode: number;
  /** Token-verified parent call (see ParentDisagreement.verified). */
  treeParent: string | null;
  /** Index of the segment (SessionTree.segments) this call belongs to. */
  segment: number;
  label: BranchLabel;
  /** For retries: the earliest call with the same prompt. */
  retryOf: string | null;
  /**
   * Context tokens this call added on top of its tree parent's prompt + completion (tool output / user turn), or on top
   * of the longest shared prefix when it starts a segment. Positions are on the call's path.
   */
  inserted: InsertedSpan | null;
  /** Leading prompt tokens found in the tree before this call was inserted. */
  sharedPrefixTokens: number;
}

/** A maximal chain of calls that extend each other token-exact, started by a root, a break, or a new root. */
export interface Segment {
  index: number;
  /** First call of the segment. */
  rootCallId: string;
  label: BranchLabel;
  lineage: Lineage;
  /** The break that started it, if any. */
  breakKind: BreakKind | null;
  /** Where it came from: the spawning call for a sub-agent segment, else break.fromCallId. */
  linkedFrom: string | null;
  /** The call (resolved to a call id) that spawned this segment's agent, when the records say so. */
  spawnedBy: string | null;
  /** The agent instance (record.agentId) of the segment's first call, if known. */
  agentId: string | null;
  callIds: string[];
}

export interface SessionTree {
  sessionId: string;
  rolloutId: string | null;
  session: SessionInfo | null;
  /** Whether this session is a sub-agent (spawned by a call of another session). */
  subAgent: boolean;
  spawnedByCallId: string | null;
  nodes: TreeNode[];
  calls: TreeCall[];
  callIndex: Map<string, number>;
  segments: Segment[];
  disagreements: ParentDisagreement[];
}

/** All session trees of one rollout, with sub-agent sessions linked to the calls that spawned them. */
export interface RolloutForest {
  rolloutId: string;
  trees: SessionTree[];
  /**
   * Sub-agent segments → the call that spawned them (in this or another session of the rollout). A sub-agent with its
   * own session links its first segment; harnesses that run sub-agents inside the main session link each sub-agent's
   * first segment.
   */
  spawnLinks: SpawnLink[];
}

export interface SpawnLink {
  sessionId: string;
  segment: number;
  rootCallId: string;
  spawnedByCallId: string;
  /** Session of the spawning call; null when that call is not among the rollout's records. */
  parentSessionId: string | null;
}

export interface TreeBuildOptions {
  /**
   * Maps an id a harness used to name a call (e.g. the protocol response id `chatcmpl-…` it received) to our call id.
   * Defaults to the identity.
   */
  resolveCallId?: (id: string) => string;
}
