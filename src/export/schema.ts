import type { CallRecord, SessionInfo } from "../icr/records.js";
import type { Segment, SessionTree, TreeCall, TreeNode } from "../trees/types.js";
import type { TableDef } from "./parquet-table.js";

/**
 * Version of the export layout (tables, columns, meanings). Bump when a column changes meaning or is removed; adding a
 * column keeps the version. Written into every file's key-value metadata (`harnessrl.export_version`) and the manifest.
 */
export const EXPORT_SCHEMA_VERSION = 1;

const json = (v: unknown): string | null => (v === undefined || v === null ? null : JSON.stringify(v));

export const CALLS_TABLE: TableDef<CallRecord> = {
  name: "calls",
  description: "one row per Interface Call Record: token ids, sampling logprobs, history relation, request/response",
  columns: [
    { name: "call_id", type: "string", get: (r) => r.callId },
    { name: "session_id", type: "string", get: (r) => r.sessionId },
    { name: "rollout_id", type: "string", nullable: true, get: (r) => r.rolloutId },
    { name: "record_version", type: "int32", get: (r) => r.schemaVersion },
    { name: "harness", type: "string", nullable: true, get: (r) => r.harness },
    { name: "agent_role", type: "string", nullable: true, get: (r) => r.agentRole },
    { name: "agent_id", type: "string", nullable: true, get: (r) => r.agentId },
    { name: "protocol", type: "string", get: (r) => r.protocol },
    { name: "stream", type: "boolean", get: (r) => r.stream },
    { name: "status", type: "string", get: (r) => r.status },
    { name: "error_code", type: "string", nullable: true, get: (r) => r.error?.code ?? null },
    { name: "error_message", type: "string", nullable: true, get: (r) => r.error?.message ?? null },
    { name: "finish_reason", type: "string", nullable: true, get: (r) => r.finishReason },
    { name: "policy_version", type: "int32", nullable: true, get: (r) => r.policyVersion },
    { name: "engine_instance", type: "string", nullable: true, get: (r) => r.engineInstance ?? null },
    { name: "parent_call_id", type: "string", nullable: true, get: (r) => r.parentCallId },
    { name: "reused_prefix_tokens", type: "int32", get: (r) => r.reusedPrefixTokens },
    { name: "break_kind", type: "string", nullable: true, get: (r) => r.break?.kind ?? null },
    { name: "break_from_call_id", type: "string", nullable: true, get: (r) => r.break?.fromCallId ?? null },
    { name: "break_detail", type: "string", nullable: true, get: (r) => r.break?.detail ?? null },
    { name: "spawned_by_call_id", type: "string", nullable: true, get: (r) => r.spawnedByCallId },
    { name: "received_at_ms", type: "int64", get: (r) => r.timings.receivedAt },
    { name: "recorded_at_ms", type: "int64", get: (r) => r.timings.recordedAt },
    { name: "engine_start_ms", type: "int64", nullable: true, get: (r) => r.timings.engineStartAt },
    { name: "first_token_ms", type: "int64", nullable: true, get: (r) => r.timings.firstTokenAt },
    { name: "engine_end_ms", type: "int64", nullable: true, get: (r) => r.timings.engineEndAt },
    { name: "prompt_tokens", type: "list<int32>", get: (r) => r.promptTokens },
    { name: "completion_tokens", type: "list<int32>", get: (r) => r.completionTokens },
    { name: "logprobs", type: "list<float>", get: (r) => r.logprobs },
    { name: "spans_json", type: "json", nullable: true, get: (r) => json(r.spans) },
    { name: "messages_json", type: "json", get: (r) => JSON.stringify(r.messages) },
    { name: "tools_json", type: "json", get: (r) => JSON.stringify(r.tools) },
    { name: "response_json", type: "json", nullable: true, get: (r) => json(r.response) },
    { name: "sampling_requested_json", type: "json", get: (r) => JSON.stringify(r.samplingRequested) },
    { name: "sampling_used_json", type: "json", nullable: true, get: (r) => json(r.samplingUsed) },
  ],
};

export const SESSIONS_TABLE: TableDef<SessionInfo> = {
  name: "sessions",
  description: "one row per session (agent conversation space); sub-agents point at their parent session and spawning call",
  columns: [
    { name: "session_id", type: "string", get: (s) => s.sessionId },
    { name: "rollout_id", type: "string", nullable: true, get: (s) => s.rolloutId },
    { name: "harness", type: "string", nullable: true, get: (s) => s.harness },
    { name: "agent_role", type: "string", nullable: true, get: (s) => s.agentRole },
    { name: "parent_session_id", type: "string", nullable: true, get: (s) => s.parentSessionId },
    { name: "spawned_by_call_id", type: "string", nullable: true, get: (s) => s.spawnedByCallId },
    { name: "created_at_ms", type: "int64", get: (s) => s.createdAt },
    { name: "metadata_json", type: "json", get: (s) => JSON.stringify(s.metadata) },
  ],
};

export interface NodeRow {
  rolloutKey: string;
  tree: SessionTree;
  node: TreeNode;
}

function nodeTokens(n: TreeNode): number[] {
  return n.src.slice(n.start, n.end) as number[];
}

export const TREE_NODES_TABLE: TableDef<NodeRow> = {
  name: "tree_nodes",
  description: "radix nodes of each session's prefix tree: a token run, its parent node, depth (= position id of its first token) and role",
  columns: [
    { name: "rollout_key", type: "string", get: (r) => r.rolloutKey },
    { name: "session_id", type: "string", get: (r) => r.tree.sessionId },
    { name: "node_id", type: "int32", get: (r) => r.node.id },
    { name: "parent_node_id", type: "int32", get: (r) => r.node.parent },
    { name: "depth", type: "int32", get: (r) => r.node.depth },
    { name: "role", type: "string", get: (r) => r.node.role },
    { name: "call_id", type: "string", nullable: true, get: (r) => r.node.callId },
    { name: "sample_offset", type: "int32", get: (r) => r.node.sampleOffset },
    { name: "tokens", type: "list<int32>", get: (r) => nodeTokens(r.node) },
    {
      name: "logprobs",
      type: "list<float>",
      get: (r) => {
        if (r.node.role !== "sampled" || r.node.callId === null) return [];
        const owner = r.tree.calls[r.tree.callIndex.get(r.node.callId) as number];
        return owner ? owner.record.logprobs.slice(r.node.sampleOffset, r.node.sampleOffset + r.node.end - r.node.start) : [];
      },
    },
    { name: "ends_call_ids", type: "list<string>", get: (r) => r.node.endsCalls.map((i) => r.tree.calls[i]?.callId ?? "") },
  ],
};

export interface TreeCallRow {
  rolloutKey: string;
  tree: SessionTree;
  call: TreeCall;
}

const seg = (r: TreeCallRow): Segment | undefined => r.tree.segments[r.call.segment];

export const TREE_CALLS_TABLE: TableDef<TreeCallRow> = {
  name: "tree_calls",
  description: "each call's place in its session tree: verified parent, segment and label, inserted context span, attach nodes",
  columns: [
    { name: "rollout_key", type: "string", get: (r) => r.rolloutKey },
    { name: "session_id", type: "string", get: (r) => r.tree.sessionId },
    { name: "call_id", type: "string", get: (r) => r.call.callId },
    { name: "label", type: "string", get: (r) => r.call.label },
    { name: "segment", type: "int32", get: (r) => r.call.segment },
    { name: "segment_label", type: "string", get: (r) => seg(r)?.label ?? "main" },
    { name: "segment_lineage", type: "string", get: (r) => seg(r)?.lineage ?? "main" },
    { name: "segment_break_kind", type: "string", nullable: true, get: (r) => seg(r)?.breakKind ?? null },
    { name: "segment_linked_from", type: "string", nullable: true, get: (r) => seg(r)?.linkedFrom ?? null },
    { name: "segment_spawned_by", type: "string", nullable: true, get: (r) => seg(r)?.spawnedBy ?? null },
    { name: "segment_agent_id", type: "string", nullable: true, get: (r) => seg(r)?.agentId ?? null },
    { name: "tree_parent_call_id", type: "string", nullable: true, get: (r) => r.call.treeParent },
    { name: "recorded_parent_call_id", type: "string", nullable: true, get: (r) => r.call.record.parentCallId },
    { name: "parent_disagreement", type: "string", nullable: true, get: (r) => r.tree.disagreements.find((d) => d.callId === r.call.callId)?.reason ?? null },
    { name: "retry_of", type: "string", nullable: true, get: (r) => r.call.retryOf },
    { name: "prompt_end_node", type: "int32", get: (r) => r.call.promptEndNode },
    { name: "end_node", type: "int32", get: (r) => r.call.endNode },
    { name: "shared_prefix_tokens", type: "int32", get: (r) => r.call.sharedPrefixTokens },
    { name: "inserted_start", type: "int32", nullable: true, get: (r) => r.call.inserted?.start ?? null },
    { name: "inserted_end", type: "int32", nullable: true, get: (r) => r.call.inserted?.end ?? null },
    { name: "inserted_kind", type: "string", nullable: true, get: (r) => r.call.inserted?.kind ?? null },
  ],
};
