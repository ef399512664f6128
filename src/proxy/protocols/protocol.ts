import type { ChatMessage, Conversation } from "../../chat/types.js";
import type { Protocol } from "../../icr/records.js";
import type { SseWriter } from "../http/sse.js";

/** A validated model-call request, already converted to the normalised conversation. */
export interface ParsedRequest {
  model: string;
  stream: boolean;
  conversation: Conversation;
  /** The sampling fields the harness asked for, as sent (recorded, then overridden by the run's config). */
  samplingRequested: Record<string, unknown>;
  /** The harness's output-token limit, if it set one. */
  maxTokens: number | undefined;
  /**
   * Tools the request offered that the policy cannot serve (hosted/server tool types: `tool_search`, `web_search`…),
   * left out of the conversation, as `type` or `type:name`. The call pipeline records them, or refuses in strict mode.
   */
  omittedTools: string[];
}

export type ReplyStopReason = "stop" | "length" | "tool_calls";

export interface ReplyToolCall {
  /** Proxy-generated id in the protocol's style (`call_…`, `toolu_…`). */
  id: string;
  name: string;
  /** The arguments as the harness receives them (JSON text). */
  arguments: string;
  /** The parsed arguments object. */
  input: Record<string, unknown>;
}

/** The assistant's answer, protocol-neutral: what every protocol's response and stream are built from. */
export interface Reply {
  /** Proxy-generated response id in the protocol's style (`chatcmpl-…`, `resp_…`, `msg_…`). */
  id: string;
  /** Unix seconds. */
  created: number;
  /** The model name the harness asked for (echoed back). */
  model: string;
  content: string;
  reasoning: string;
  toolCalls: ReplyToolCall[];
  stopReason: ReplyStopReason;
  usage: { inputTokens: number; outputTokens: number };
}

/**
 * The protocol-specific half of a streamed answer. The call pipeline drives it with protocol-neutral events; the
 * writer turns them into the exact event sequence the protocol's official SDK accumulates.
 */
export interface ProtocolStream {
  /** Reasoning text (emitted as soon as the model closed its reasoning). */
  reasoning(text: string): void;
  /** A piece of visible content, as sampled. */
  content(delta: string): void;
  /** Closes open blocks and emits the tool calls: everything but the terminal events. */
  finishBody(reply: Reply): void;
  /** The terminal events; written only after the call's record is durable. */
  end(reply: Reply): void;
  /** Reports a failure after the stream has started (the status line is already sent). */
  fail(error: { status: number; body: Record<string, unknown> }): void;
}

/** One API protocol: request validation + normalisation, response and stream construction. */
export interface ProtocolAdapter<R extends ParsedRequest = ParsedRequest> {
  readonly protocol: Protocol;
  /** Validates the JSON body and normalises it; throws HarnessError with a message naming the offending field. */
  parse(body: unknown): R;
  newResponseId(): string;
  newToolCallId(): string;
  /** The complete (non-streamed) response body. For streams this is also what the record stores as rawResponse. */
  buildResponse(request: R, reply: Reply): Record<string, unknown>;
  /**
   * The assistant turn exactly as the harness will send it back in later requests, normalised the way `parse`
   * normalises history, so that the history planner can recognise the proxy's own turns.
   */
  echoMessage(request: R, reply: Reply): ChatMessage;
  openStream(request: R, reply: Reply, sse: SseWriter): ProtocolStream;
}
