import { encodeFloat32, encodeInt32, decodeFloat32 } from "./blob.js";
import type { ResolvedCall } from "./delta-resolver.js";
import { TokenHasher, deltaPrefix } from "./prompt-delta.js";
import type { RecentCalls } from "./recent-calls.js";
import { textDelta, type TextDelta } from "./text-delta.js";
import type { CallRecord, SessionInfo } from "../icr/records.js";
import type { InsertHints } from "./types.js";

/**
 * The row layout of stored sessions, calls and landed rollouts, shared by the SQLite and Postgres stores: the same
 * columns, the same prompt and text deltas against the call a record extends, the same little-endian blobs.
 */

export interface SessionRow {
  session_id: string;
  rollout_id: string | null;
  harness: string | null;
  agent_role: string | null;
  parent_session_id: string | null;
  spawned_by_call_id: string | null;
  created_at: number;
  metadata_json: string;
}

export interface RolloutRow {
  rollout_id: string;
  attempt: number;
  node_id: string;
  result_json: string;
  landed_at: number;
}

export interface CallRow {
  seq: number;
  call_id: string;
  session_id: string;
  rollout_id: string | null;
  record_version: number;
  harness: string | null;
  agent_role: string | null;
  agent_id: string | null;
  protocol: CallRecord["protocol"];
  stream: number;
  status: CallRecord["status"];
  finish_reason: CallRecord["finishReason"];
  policy_version: number | null;
  parent_call_id: string | null;
  reused_prefix_tokens: number;
  spawned_by_call_id: string | null;
  /** Prompt stored as a delta: `prompt_tokens` holds what follows this many tokens of the base's prompt + completion. */
  prompt_base_call_id: string | null;
  prompt_base_len: number;
  /** Messages / raw request / tools stored as text deltas (text-delta.ts) of this call's: the middle, with these kept. */
  text_base_call_id: string | null;
  messages_keep: number;
  messages_tail: number;
  raw_request_keep: number;
  raw_request_tail: number;
  tools_keep: number;
  tools_tail: number;
  prompt_tokens: Uint8Array;
  completion_tokens: Uint8Array;
  logprobs: Uint8Array;
  messages_json: string;
  tools_json: string;
  response_json: string | null;
  raw_request_json: string | null;
  raw_response_json: string | null;
  meta_json: string;
  /** NULL for records written before ICR schema 2. */
  spans_json: string | null;
}

/** The parts of a record without a column of their own. */
export interface CallMeta {
  error: CallRecord["error"];
  samplingRequested: CallRecord["samplingRequested"];
  samplingUsed: CallRecord["samplingUsed"];
  timings: CallRecord["timings"];
  break: CallRecord["break"];
  realigned?: CallRecord["realigned"];
  omittedTools?: CallRecord["omittedTools"];
  /** ICR schema 5; kept in the meta JSON, so older rows (and older readers) need no migration. */
  engineInstance?: CallRecord["engineInstance"];
}


/** The columns `encodeCall` fills, in its order. */
export const CALL_COLUMNS = [
  "call_id", "session_id", "rollout_id", "record_version", "harness", "agent_role", "agent_id", "protocol", "stream", "status",
  "finish_reason", "policy_version", "parent_call_id", "reused_prefix_tokens", "break_kind", "spawned_by_call_id", "received_at",
  "recorded_at", "prompt_len", "completion_len", "prompt_tokens", "completion_tokens", "logprobs", "messages_json", "tools_json",
  "response_json", "raw_request_json", "raw_response_json", "meta_json", "prompt_base_call_id", "prompt_base_len", "text_base_call_id",
  "messages_keep", "messages_tail", "raw_request_keep", "raw_request_tail", "tools_keep", "tools_tail", "spans_json",
] as const;

export type CallValue = string | number | Buffer | null;

export interface EncodedCall {
  /** One value per CALL_COLUMNS entry. */
  values: CallValue[];
  /** Call once the row is written: the call becomes the delta base of its session's next turn. */
  remember(): void;
}

/**
 * A record as a row: the prompt as a delta of its parent's prompt + completion and the JSON texts as text deltas of
 * the parent's, when the writer still holds the parent in `recent` (a base always lies in the same store).
 */
export function encodeCall(r: CallRecord, hints: InsertHints, recent: RecentCalls): EncodedCall {
  const meta: CallMeta = { error: r.error, samplingRequested: r.samplingRequested, samplingUsed: r.samplingUsed, timings: r.timings, break: r.break, ...(r.realigned && r.realigned.length > 0 ? { realigned: r.realigned } : {}), ...(r.omittedTools && r.omittedTools.length > 0 ? { omittedTools: r.omittedTools } : {}), ...(r.engineInstance !== undefined ? { engineInstance: r.engineInstance } : {}) };
  const base = r.parentCallId === null ? undefined : recent.get(r.parentCallId);
  const hasher = new TokenHasher();
  const baseLen = deltaPrefix(r.promptTokens, r.reusedPrefixTokens, base?.tokens, hasher);
  const messagesJson = JSON.stringify(r.messages);
  const rawRequestJson = r.rawRequest === undefined ? null : (hints.rawRequestJson ?? JSON.stringify(r.rawRequest));
  const toolsJson = JSON.stringify(r.tools);
  const messagesDelta = base?.messagesJson ? textDelta(base.messagesJson, messagesJson) : null;
  const rawDelta = base?.rawRequestJson && rawRequestJson !== null ? textDelta(base.rawRequestJson, rawRequestJson) : null;
  const toolsDelta = base?.toolsJson ? textDelta(base.toolsJson, toolsJson) : null;
  const textBase = messagesDelta || rawDelta || toolsDelta ? r.parentCallId : null;
  const values: CallValue[] = [
    r.callId, r.sessionId, r.rolloutId, r.schemaVersion, r.harness, r.agentRole, r.agentId, r.protocol, r.stream ? 1 : 0,
    r.status, r.finishReason, r.policyVersion, r.parentCallId, r.reusedPrefixTokens, r.break?.kind ?? null,
    r.spawnedByCallId, r.timings.receivedAt, r.timings.recordedAt, r.promptTokens.length, r.completionTokens.length,
    encodeInt32(r.promptTokens, baseLen), encodeInt32(r.completionTokens), encodeFloat32(r.logprobs),
    middleOf(messagesDelta, messagesJson), middleOf(toolsDelta, toolsJson), r.response === null ? null : JSON.stringify(r.response),
    rawRequestJson === null ? null : middleOf(rawDelta, rawRequestJson), jsonOrNull(r.rawResponse), JSON.stringify(meta),
    baseLen > 0 ? r.parentCallId : null, baseLen, textBase, messagesDelta?.keep ?? 0, messagesDelta?.tail ?? 0, rawDelta?.keep ?? 0,
    rawDelta?.tail ?? 0, toolsDelta?.keep ?? 0, toolsDelta?.tail ?? 0, r.spans === null ? null : JSON.stringify(r.spans),
  ];
  return {
    values,
    remember: () => {
      // The digest of prompt + completion continues from the prefix the delta check hashed (if any).
      hasher.update(r.promptTokens, hasher.length);
      recent.set(r.callId, { tokens: hasher.update(r.completionTokens).digest(), messagesJson, rawRequestJson, toolsJson });
    },
  };
}

function jsonOrNull(v: unknown): string | null {
  return v === undefined ? null : JSON.stringify(v);
}

export function parseJson<T>(text: string | null, fallback: T): T {
  return text === null ? fallback : (JSON.parse(text) as T);
}

export function sessionFromRow(row: SessionRow): SessionInfo {
  return {
    sessionId: row.session_id,
    rolloutId: row.rollout_id,
    harness: row.harness,
    agentRole: row.agent_role,
    parentSessionId: row.parent_session_id,
    spawnedByCallId: row.spawned_by_call_id,
    createdAt: row.created_at,
    metadata: parseJson<Record<string, unknown>>(row.metadata_json, {}),
  };
}

/** The stored text: the middle of a delta, or the whole text. */
function middleOf(delta: TextDelta | null, whole: string): string {
  return delta ? delta.middle : whole;
}

export function callFromRow(row: CallRow, resolved: ResolvedCall): CallRecord {
  const meta = JSON.parse(row.meta_json) as CallMeta;
  return {
    schemaVersion: row.record_version,
    callId: row.call_id,
    sessionId: row.session_id,
    rolloutId: row.rollout_id,
    harness: row.harness,
    agentRole: row.agent_role,
    agentId: row.agent_id,
    protocol: row.protocol,
    stream: row.stream === 1,
    status: row.status,
    error: meta.error,
    rawRequest: parseJson<unknown>(resolved.rawRequestJson, undefined),
    rawResponse: parseJson<unknown>(row.raw_response_json, undefined),
    messages: JSON.parse(resolved.messagesJson) as CallRecord["messages"],
    tools: JSON.parse(resolved.toolsJson) as CallRecord["tools"],
    response: parseJson<CallRecord["response"]>(row.response_json, null),
    promptTokens: resolved.prompt,
    completionTokens: resolved.completion,
    logprobs: decodeFloat32(row.logprobs),
    spans: parseJson<CallRecord["spans"]>(row.spans_json, null),
    policyVersion: row.policy_version,
    samplingRequested: meta.samplingRequested,
    samplingUsed: meta.samplingUsed,
    finishReason: row.finish_reason,
    timings: meta.timings,
    parentCallId: row.parent_call_id,
    reusedPrefixTokens: row.reused_prefix_tokens,
    break: meta.break,
    ...(meta.realigned ? { realigned: meta.realigned } : {}),
    ...(meta.omittedTools ? { omittedTools: meta.omittedTools } : {}),
    spawnedByCallId: row.spawned_by_call_id,
    ...(meta.engineInstance !== undefined ? { engineInstance: meta.engineInstance } : {}),
  };
}
