import type { ChatMessage } from "../../../chat/types.js";
import { newSecret } from "../../../core/ids.js";
import type { Reply, ReplyStopReason } from "../protocol.js";

export const STOP_REASON: Record<ReplyStopReason, string> = { stop: "end_turn", length: "max_tokens", tool_calls: "tool_use" };

/**
 * Thinking blocks must carry a signature for clients to send them back; ours is an opaque random token (the proxy
 * recognises its own turns by content, not by signature).
 */
export function thinkingSignature(): string {
  return newSecret("sig");
}

/** Content blocks in answer order: thinking, text, tool_use. An answer with nothing in it is one empty text block. */
export function contentBlocks(reply: Reply): Record<string, unknown>[] {
  const blocks: Record<string, unknown>[] = [];
  if (reply.reasoning !== "") blocks.push({ type: "thinking", thinking: reply.reasoning, signature: thinkingSignature() });
  if (reply.content !== "" || (reply.toolCalls.length === 0 && blocks.length === 0)) blocks.push({ type: "text", text: reply.content });
  for (const c of reply.toolCalls) blocks.push({ type: "tool_use", id: c.id, name: c.name, input: c.input });
  return blocks;
}

export function usageOf(reply: Reply): Record<string, number> {
  return { input_tokens: reply.usage.inputTokens, output_tokens: reply.usage.outputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

export function buildMessage(reply: Reply): Record<string, unknown> {
  return {
    id: reply.id,
    type: "message",
    role: "assistant",
    model: reply.model,
    content: contentBlocks(reply),
    stop_reason: STOP_REASON[reply.stopReason],
    stop_sequence: null,
    usage: usageOf(reply),
  };
}

/** Mirrors the request normaliser: text blocks → content, thinking → reasoning, tool_use input re-serialised. */
export function echoAnthropicMessage(reply: Reply): ChatMessage {
  const out: ChatMessage = { role: "assistant", content: reply.content };
  if (reply.reasoning !== "") out.reasoning = reply.reasoning;
  if (reply.toolCalls.length > 0) out.toolCalls = reply.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: JSON.stringify(c.input) }));
  return out;
}
