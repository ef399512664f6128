import type { ChatMessage } from "../../../chat/types.js";
import type { Reply } from "../protocol.js";

/** The `message` of a chat completion, which is also what the harness sends back as history. */
export function chatMessageOf(reply: Reply): Record<string, unknown> {
  const message: Record<string, unknown> = {
    role: "assistant",
    content: reply.content === "" && reply.toolCalls.length > 0 ? null : reply.content,
    refusal: null,
  };
  if (reply.reasoning !== "") message.reasoning_content = reply.reasoning;
  if (reply.toolCalls.length > 0) {
    message.tool_calls = reply.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
  }
  return message;
}

export function buildChatCompletion(reply: Reply): Record<string, unknown> {
  return {
    id: reply.id,
    object: "chat.completion",
    created: reply.created,
    model: reply.model,
    choices: [{ index: 0, message: chatMessageOf(reply), finish_reason: reply.stopReason, logprobs: null }],
    usage: usageOf(reply),
  };
}

export function usageOf(reply: Reply): Record<string, number> {
  return { prompt_tokens: reply.usage.inputTokens, completion_tokens: reply.usage.outputTokens, total_tokens: reply.usage.inputTokens + reply.usage.outputTokens };
}

/** Mirrors the request normaliser: null content reads back as "", reasoning_content as reasoning. */
export function echoChatMessage(reply: Reply): ChatMessage {
  const out: ChatMessage = { role: "assistant", content: reply.content };
  if (reply.reasoning !== "") out.reasoning = reply.reasoning;
  if (reply.toolCalls.length > 0) out.toolCalls = reply.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }));
  return out;
}
