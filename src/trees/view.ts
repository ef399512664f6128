import type { BreakKind } from "../icr/records.js";
import { treePaths } from "./paths.js";
import type { BranchLabel, ContextKind, Lineage, ParentDisagreement, RolloutForest, SessionTree, TokenRole, TreeNode } from "./types.js";

/** A JSON-friendly description of session trees: what `harnessrl trees --json` prints. */
export interface CallView {
  callId: string;
  label: BranchLabel;
  segment: number;
  /** Token-verified parent and the one the proxy recorded. */
  treeParent: string | null;
  recordedParent: string | null;
  retryOf: string | null;
  agentRole: string | null;
  promptTokens: number;
  completionTokens: number;
  sharedPrefixTokens: number;
  inserted: { kind: ContextKind; tokens: number } | null;
  /** Completion tokens that are trainable in the tree (sampled by this call; 0 for a duplicate regeneration). */
  trainableTokens: number;
  break: { kind: BreakKind; fromCallId: string | null; detail: string } | null;
  status: "ok" | "error";
  finishReason: string | null;
  policyVersion: number | null;
  /** Calls whose verified parent is this call, in recording order. */
  children: string[];
}

export interface NodeView {
  id: number;
  parent: number;
  depth: number;
  tokens: number;
  role: TokenRole;
  callId: string | null;
  endsCalls: string[];
}

export interface SessionView {
  sessionId: string;
  rolloutId: string | null;
  subAgent: boolean;
  spawnedByCallId: string | null;
  calls: CallView[];
  segments: { index: number; label: BranchLabel; lineage: Lineage; breakKind: BreakKind | null; linkedFrom: string | null; spawnedBy: string | null; agentId: string | null; callIds: string[] }[];
  paths: { leafCallId: string; tokens: number; calls: string[] }[];
  uniqueTokens: number;
  flatTokens: number;
  trainableTokens: number;
  tokensByRole: Partial<Record<TokenRole, number>>;
  disagreements: ParentDisagreement[];
  nodes?: NodeView[];
}

export interface ForestView {
  rolloutId: string;
  spawnLinks: RolloutForest["spawnLinks"];
  sessions: SessionView[];
}

function runLength(n: TreeNode): number {
  return n.end - n.start;
}

export function viewSession(tree: SessionTree, options: { nodes?: boolean } = {}): SessionView {
  const trainableByCall = new Map<string, number>();
  const tokensByRole: Partial<Record<TokenRole, number>> = {};
  let unique = 0;
  for (const n of tree.nodes) {
    if (n.id === 0) continue;
    unique += runLength(n);
    tokensByRole[n.role] = (tokensByRole[n.role] ?? 0) + runLength(n);
    if (n.role === "sampled" && n.callId !== null) trainableByCall.set(n.callId, (trainableByCall.get(n.callId) ?? 0) + runLength(n));
  }
  const children = new Map<string, string[]>();
  for (const c of tree.calls) {
    if (c.treeParent === null) continue;
    const list = children.get(c.treeParent) ?? [];
    list.push(c.callId);
    children.set(c.treeParent, list);
  }
  const paths = treePaths(tree);
  const calls: CallView[] = tree.calls.map((c) => ({
    callId: c.callId,
    label: c.label,
    segment: c.segment,
    treeParent: c.treeParent,
    recordedParent: c.record.parentCallId,
    retryOf: c.retryOf,
    agentRole: c.record.agentRole,
    promptTokens: c.record.promptTokens.length,
    completionTokens: c.record.completionTokens.length,
    sharedPrefixTokens: c.sharedPrefixTokens,
    inserted: c.inserted ? { kind: c.inserted.kind, tokens: c.inserted.end - c.inserted.start } : null,
    trainableTokens: trainableByCall.get(c.callId) ?? 0,
    break: c.record.break ? { kind: c.record.break.kind, fromCallId: c.record.break.fromCallId, detail: c.record.break.detail } : null,
    status: c.record.status,
    finishReason: c.record.finishReason,
    policyVersion: c.record.policyVersion,
    children: children.get(c.callId) ?? [],
  }));
  const view: SessionView = {
    sessionId: tree.sessionId,
    rolloutId: tree.rolloutId,
    subAgent: tree.subAgent,
    spawnedByCallId: tree.spawnedByCallId,
    calls,
    segments: tree.segments.map((s) => ({ index: s.index, label: s.label, lineage: s.lineage, breakKind: s.breakKind, linkedFrom: s.linkedFrom, spawnedBy: s.spawnedBy, agentId: s.agentId, callIds: [...s.callIds] })),
    paths: paths.map((p) => ({ leafCallId: p.leafCall.callId, tokens: p.length, calls: p.calls.map((c) => c.callId) })),
    uniqueTokens: unique,
    flatTokens: paths.reduce((s, p) => s + p.length, 0),
    trainableTokens: tokensByRole.sampled ?? 0,
    tokensByRole,
    disagreements: tree.disagreements,
  };
  if (options.nodes) {
    view.nodes = tree.nodes.slice(1).map((n) => ({ id: n.id, parent: n.parent, depth: n.depth, tokens: runLength(n), role: n.role, callId: n.callId, endsCalls: n.endsCalls.map((i) => tree.calls[i]?.callId ?? "") }));
  }
  return view;
}

export function viewForest(forest: RolloutForest, options: { nodes?: boolean } = {}): ForestView {
  return { rolloutId: forest.rolloutId, spawnLinks: forest.spawnLinks, sessions: forest.trees.map((t) => viewSession(t, options)) };
}
