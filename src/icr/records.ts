import type { ChatMessage, ToolSpec } from "../chat/types.js";
import type { FinishReason, SamplingParams } from "./sampling.js";

/**
 * Version of the persisted Interface Call Record shape. Bump with a migration when it changes.
 * 2: `spans` (the completion's tool calls in tokens; null in version-1 records).
 * 3: `realigned` (turns the harness changed only in form, kept as sampled); older records read as none realigned.
 * 4: `omittedTools` (tool types the request offered that the policy cannot serve); older records read as none.
 * 5: `engineInstance` (the running engine that sampled the call); older records read as unknown (absent).
 */
export const ICR_SCHEMA_VERSION = 5;

export type Protocol = "openai-chat" | "openai-responses" | "anthropic-messages";

/**
 * Why a call's prompt does not extend an earlier call's prompt + completion token for token.
 * `none` is never stored: a call without a break has `break: null`.
 */
export type BreakKind =
  | "compaction" // history shrank / was summarised
  | "edited_history" // an earlier turn's content was changed
  | "dropped_turns" // earlier turns were removed
  | "stripped_reasoning" // reasoning of an earlier assistant turn was removed
  | "reserialized_tool_args" // tool-call arguments came back as different JSON text with the same value
  | "rewritten_tool_call_ids" // tool-call ids were changed by the harness
  | "template_not_prefix_stable" // the chat template renders earlier turns differently later (e.g. Qwen3 <think> strip)
  | "unknown_assistant_turn" // an assistant turn this proxy never produced for the session
  | "new_root"; // no relation to any earlier call of the session (first call of a sub-agent, side call)

export interface HistoryBreak {
  kind: BreakKind;
  /** Human-readable detail: which message index, what differed. */
  detail: string;
  /** The call whose history was rewritten, if one was identified. */
  fromCallId: string | null;
}

/**
 * A turn the harness sent back changed only in form (arguments that parse to the same JSON value, e.g. re-stringified
 * by a JavaScript harness): the prompt keeps the tokens that were sampled for it, and the call records that it did so.
 * Not a break: the prompt still extends its parent token for token.
 */
export interface RealignedTurn {
  /** Index of the assistant message in the request's `messages`. */
  messageIndex: number;
  kind: "reserialized_tool_args";
  /** The call that sampled the turn. */
  fromCallId: string | null;
}

export interface CallTimings {
  /** Unix ms when the request arrived. */
  receivedAt: number;
  engineStartAt: number | null;
  firstTokenAt: number | null;
  engineEndAt: number | null;
  /** When the record was written (before the response completed). */
  recordedAt: number;
}

/** [start, end) offsets into a call's completion tokens (token indices, not characters). */
export type TokenRange = [start: number, end: number];

/** One tool call the parser found in a completion, located in completion tokens. */
export interface ToolCallTokens {
  name: string;
  /** The call's block except its arguments value: the tags, the name and the JSON around them. */
  action: TokenRange[];
  /** The arguments value (empty when the call had none). A token shared with the block's other text counts as args. */
  args: TokenRange[];
}

/**
 * What the proxy's parser found in a completion, in token offsets, recorded once when the call is answered (ICR schema
 * 2+) so that masks, validity and decisions never decode or re-parse. Tool calls in the parser's (= the model's) order.
 */
export interface CompletionSpans {
  toolCalls: ToolCallTokens[];
  /** Tool-call blocks that held no valid call. */
  malformed: number;
}

/** Interface Call Record: everything we know about one model call made through the proxy. */
export interface CallRecord {
  schemaVersion: number;
  callId: string;
  sessionId: string;
  rolloutId: string | null;
  harness: string | null;
  /** Agent role within the harness, e.g. "main", "subagent", "title", when known. */
  agentRole: string | null;
  /** Sub-agent instance id within the session, when the harness says it. */
  agentId: string | null;
  protocol: Protocol;
  stream: boolean;
  status: "ok" | "error";
  error: { code: string; message: string; fault: string } | null;
  rawRequest: unknown;
  /** The response as sent (for streams: the assembled final object). */
  rawResponse: unknown;
  messages: ChatMessage[];
  tools: ToolSpec[];
  /** The normalised assistant turn returned to the harness (ids assigned). */
  response: ChatMessage | null;
  promptTokens: number[];
  completionTokens: number[];
  /** Sampling logprob per completion token. */
  logprobs: number[];
  /** The completion's tool calls in tokens, parsed with the engine's codec; null only in records from ICR schema 1. */
  spans: CompletionSpans | null;
  policyVersion: number | null;
  samplingRequested: Record<string, unknown>;
  samplingUsed: SamplingParams | null;
  finishReason: FinishReason | null;
  timings: CallTimings;
  /** The call whose prompt + completion this call's prompt extends (token-exact), or from which it branched. */
  parentCallId: string | null;
  /** Number of leading prompt tokens copied token-exact from the parent's prompt + completion. */
  reusedPrefixTokens: number;
  break: HistoryBreak | null;
  /** Turns of the request kept as sampled although the harness re-serialised them (absent or empty: none). */
  realigned?: RealignedTurn[];
  /** Tools of the request left out of the policy's prompt (hosted tool types it cannot serve), as `type` or `type:name`. */
  omittedTools?: string[];
  /** A parent call in another session that spawned this session (sub-agents). */
  spawnedByCallId: string | null;
  /** The engine instance that sampled the completion (GenerateResult.engineInstance); absent when unknown or before schema 5. */
  engineInstance?: string;
}

/** A session = one agent conversation space, bound to the credential the harness uses. */
export interface SessionInfo {
  sessionId: string;
  rolloutId: string | null;
  harness: string | null;
  agentRole: string | null;
  /** The parent session for sub-agents. */
  parentSessionId: string | null;
  spawnedByCallId: string | null;
  createdAt: number;
  metadata: Record<string, unknown>;
}
