import type { CallRecord, SessionInfo } from "../icr/records.js";
import { append, boundary, newRoot, walk } from "./radix.js";
import type { BranchLabel, ContextKind, Lineage, Segment, SessionTree, TreeBuildOptions, TreeCall, TreeNode } from "./types.js";

/** An agent role that names a sub-agent (e.g. Claude Code's Task tool, "subagent", "agent:explore"). */
const SUB_AGENT_ROLE = /sub|task|agent/i;

/**
 * What the record says about its branch, or null when it says nothing: a record spawned by another call is a sub-agent;
 * the session's main role (its first call's) or no role says nothing; another role is a sub-agent if named like one,
 * else a side call (title generation, quota probes).
 */
function roleLabel(record: CallRecord, mainRole: string | null): "sub-agent" | "side" | null {
  if (record.spawnedByCallId !== null) return "sub-agent";
  const role = record.agentRole;
  if (role === null || role === "" || role === "main" || role === mainRole) return null;
  return SUB_AGENT_ROLE.test(role) ? "sub-agent" : "side";
}

function breakLabel(record: CallRecord, fallback: BranchLabel): BranchLabel {
  const kind = record.break?.kind;
  if (kind === "compaction" || kind === "dropped_turns") return "compaction";
  if (kind === "new_root" || kind === undefined) return fallback;
  return "rewrite";
}

/** The lineage of the earlier call of this session that a break came from, if the session holds that call. */
function brokenFromLineage(tree: SessionTree, record: CallRecord, resolve: (id: string) => string): Lineage | undefined {
  const from = record.break?.fromCallId;
  if (from === undefined || from === null || record.break?.kind === "new_root") return undefined;
  const index = tree.callIndex.get(from) ?? tree.callIndex.get(resolve(from));
  const call = index === undefined ? undefined : tree.calls[index];
  return call === undefined ? undefined : tree.segments[call.segment]?.lineage;
}

function isAncestorOrSelf(nodes: TreeNode[], ancestor: number, node: number): boolean {
  for (let n = node; n >= 0; n = (nodes[n] as TreeNode).parent) if (n === ancestor) return true;
  return false;
}

/**
 * Builds the prefix tree of one session from its calls in recording order. Each call's prompt is matched token-wise
 * against the tree; the call attaches where the match ends (splitting a run if needed); its completion hangs below as
 * sampled tokens. `parentCallId` is only a hint: the verified parent is the deepest earlier call whose prompt +
 * completion is a prefix of this prompt, and any difference is recorded in `disagreements`.
 */
export function buildSessionTree(records: readonly CallRecord[], session: SessionInfo | null = null, options: TreeBuildOptions = {}): SessionTree {
  const resolve = options.resolveCallId ?? ((id: string) => id);
  const first = records[0];
  const sessionId = session?.sessionId ?? first?.sessionId ?? "";
  // Only the session (or its first call) says whether the whole session is a sub-agent: later calls may be sub-agents
  // that a central agent runs inside its own session.
  const spawnedRaw = session?.spawnedByCallId ?? first?.spawnedByCallId ?? null;
  const spawnedByCallId = spawnedRaw === null ? null : resolve(spawnedRaw);
  const subAgent = spawnedByCallId !== null || session?.parentSessionId != null || (first !== undefined && roleLabel(first, null) === "sub-agent");
  const tree: SessionTree = {
    sessionId,
    rolloutId: session?.rolloutId ?? first?.rolloutId ?? null,
    session,
    subAgent,
    spawnedByCallId,
    nodes: [newRoot()],
    calls: [],
    callIndex: new Map(),
    segments: [],
    disagreements: [],
  };
  const mainRole = subAgent ? null : (first?.agentRole ?? null);
  for (const record of records) insertCall(tree, record, mainRole, resolve);
  return tree;
}

function insertCall(tree: SessionTree, record: CallRecord, mainRole: string | null, resolve: (id: string) => string): void {
  const { nodes, calls } = tree;
  if (tree.callIndex.has(record.callId)) return; // a store may hand the same record twice; the first one wins
  const index = calls.length;
  const prompt = record.promptTokens;
  const completion = record.completionTokens;

  const w = walk(nodes, 0, prompt, 0, prompt.length);
  // Verified parent: the deepest fully matched node at which some call's prompt + completion ends.
  let candidates: number[] = [];
  for (let i = w.path.length - 1; i >= 0; i--) {
    const ends = (nodes[w.path[i] as number] as TreeNode).endsCalls;
    if (ends.length > 0) {
      candidates = ends;
      break;
    }
  }
  const hintIndex = record.parentCallId === null ? undefined : tree.callIndex.get(record.parentCallId);
  const parentIdx = hintIndex !== undefined && candidates.includes(hintIndex) ? hintIndex : candidates[candidates.length - 1];
  const parent = parentIdx === undefined ? null : (calls[parentIdx] as TreeCall);

  let promptEnd = boundary(nodes, calls, w);
  const samePrompt = w.consumed === prompt.length ? (nodes[promptEnd] as TreeNode).promptEnds : [];
  const retryOfIdx = samePrompt[0];
  const retryOf = retryOfIdx === undefined ? null : (calls[retryOfIdx] as TreeCall);

  // Segment and label.
  let segment: number;
  let label: BranchLabel;
  let insertedKind: ContextKind;
  if (retryOf !== null && record.break === null) {
    segment = retryOf.segment;
    label = "retry";
    insertedKind = retryOf.inserted?.kind ?? "prompt";
  } else if (record.break !== null || parent === null) {
    const isFirst = tree.segments.length === 0;
    const own = roleLabel(record, mainRole);
    const base: Lineage = own ?? (tree.subAgent ? "sub-agent" : isFirst ? "main" : "side");
    label = breakLabel(record, base);
    // A rewrite or compaction continues the conversation it broke from; one whose origin is unknown is taken to be the
    // agent's own (as its label always was), a new root is a side conversation.
    const continues = own === null && !tree.subAgent && !isFirst && label !== "side";
    const lineage = continues ? (brokenFromLineage(tree, record, resolve) ?? "main") : base;
    const spawnedBy = record.spawnedByCallId !== null ? resolve(record.spawnedByCallId) : isFirst ? tree.spawnedByCallId : null;
    const seg: Segment = {
      index: tree.segments.length,
      rootCallId: record.callId,
      label,
      lineage,
      breakKind: record.break?.kind ?? null,
      linkedFrom: label === "sub-agent" && spawnedBy !== null ? spawnedBy : (record.break?.fromCallId ?? spawnedBy),
      spawnedBy,
      agentId: record.agentId,
      callIds: [],
    };
    tree.segments.push(seg);
    segment = seg.index;
    insertedKind = record.break !== null && record.break.kind !== "new_root" ? "harness" : parent === null ? "prompt" : "harness";
  } else {
    segment = parent.segment;
    label = (tree.segments[segment] as Segment).label;
    insertedKind = (parent.record.response?.toolCalls?.length ?? 0) > 0 ? "tool_output" : "user";
  }

  if (w.consumed < prompt.length) promptEnd = append(nodes, promptEnd, prompt, w.consumed, prompt.length, insertedKind, record.callId, -1);

  const insertedStart = parent === null ? w.consumed : Math.min(w.consumed, parentEndDepth(nodes, parent));
  const call: TreeCall = {
    index,
    callId: record.callId,
    record,
    promptEndNode: promptEnd,
    endNode: promptEnd,
    treeParent: retryOf !== null && record.break === null ? retryOf.treeParent : (parent?.callId ?? null),
    segment,
    label,
    retryOf: retryOf?.callId ?? null,
    inserted: insertedStart < prompt.length ? { start: insertedStart, end: prompt.length, kind: insertedKind } : null,
    sharedPrefixTokens: w.consumed,
  };
  calls.push(call);
  tree.callIndex.set(record.callId, index);
  (tree.segments[segment] as Segment).callIds.push(record.callId);
  (nodes[promptEnd] as TreeNode).promptEnds.push(index);

  // Completion: shared runs (an identical regeneration, or tokens that were context of another call) become sampled.
  const wc = walk(nodes, promptEnd, completion, 0, completion.length);
  const covered = [...wc.path];
  let end = boundary(nodes, calls, wc);
  if (wc.offset > 0 && !covered.includes(wc.node) && wc.node !== promptEnd) covered.push(wc.node);
  for (const id of covered) {
    const n = nodes[id] as TreeNode;
    if (n.role !== "sampled") {
      n.role = "sampled";
      n.callId = record.callId;
      n.sampleOffset = n.depth - prompt.length;
    }
  }
  if (wc.consumed < completion.length) end = append(nodes, end, completion, wc.consumed, completion.length, "sampled", record.callId, wc.consumed);
  call.endNode = end;
  (nodes[end] as TreeNode).endsCalls.push(index);

  recordDisagreement(tree, call, samePrompt);
}

function parentEndDepth(nodes: TreeNode[], parent: TreeCall): number {
  const n = nodes[parent.endNode] as TreeNode;
  return n.depth + (n.end - n.start);
}

function recordDisagreement(tree: SessionTree, call: TreeCall, samePrompt: number[]): void {
  const recorded = call.record.parentCallId;
  const verified = call.treeParent;
  if (recorded === verified) return;
  const recordedIdx = recorded === null ? undefined : tree.callIndex.get(recorded);
  // A retry's recorded parent may be the sibling it regenerates ("branched from"): that is consistent.
  if (recordedIdx !== undefined && samePrompt.includes(recordedIdx)) return;
  // After a history break the proxy records the call it branched from, which by definition is not a token prefix.
  if (call.record.break !== null && recorded === call.record.break.fromCallId && recorded !== null) return;
  let reason: string;
  if (recorded === null) reason = "no parent recorded, but an earlier call's prompt + completion prefixes this prompt";
  else if (recordedIdx === undefined) reason = "recorded parent is not an earlier call of this session";
  else {
    const rc = tree.calls[recordedIdx] as TreeCall;
    if (verified === null) reason = "recorded parent's prompt + completion is not a prefix of this prompt; no earlier call is";
    else if (isAncestorOrSelf(tree.nodes, rc.endNode, call.promptEndNode)) reason = "recorded parent is a prefix, but a later call extends it further";
    else reason = "recorded parent's prompt + completion is not a prefix of this prompt";
  }
  tree.disagreements.push({ callId: call.callId, recorded, verified, reason });
}
