import type { ChatMessage } from "../../../chat/types.js";
import type { Reply, ReplyToolCall } from "../protocol.js";
import { encodeReasoning } from "./reasoning.js";
import { customArguments, type ResponsesRequest } from "./request.js";

/** Output item ids derive from the response id, so streamed events and the final response agree without shared state. */
export function itemIds(reply: Reply): { reasoning: string; message: string; call: (i: number, custom: boolean) => string } {
  const suffix = reply.id.slice(reply.id.indexOf("_") + 1);
  return {
    reasoning: `rs_${suffix}`,
    message: `msg_${suffix}`,
    call: (i, custom) => `${custom ? "ctc" : "fc"}_${suffix}_${i}`,
  };
}

/** What a freeform tool receives: the model's `input` string, or its whole argument object as JSON text. */
export function customInput(call: ReplyToolCall): string {
  const input = call.input.input;
  return typeof input === "string" ? input : call.arguments;
}

export function reasoningItem(req: ResponsesRequest, reply: Reply): Record<string, unknown> {
  const item: Record<string, unknown> = {
    type: "reasoning",
    id: itemIds(reply).reasoning,
    summary: [],
    content: [{ type: "reasoning_text", text: reply.reasoning }],
  };
  if (req.includeEncryptedReasoning) item.encrypted_content = encodeReasoning(reply.reasoning);
  return item;
}

export function outputTextPart(text: string): Record<string, unknown> {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

export function messageItem(reply: Reply, status: "in_progress" | "completed"): Record<string, unknown> {
  return {
    type: "message",
    id: itemIds(reply).message,
    status,
    role: "assistant",
    content: status === "completed" ? [outputTextPart(reply.content)] : [],
  };
}

export function callItem(req: ResponsesRequest, reply: Reply, i: number, done: boolean): Record<string, unknown> {
  const call = reply.toolCalls[i] as ReplyToolCall;
  const custom = req.customTools.has(call.name);
  const id = itemIds(reply).call(i, custom);
  if (custom) return { type: "custom_tool_call", id, call_id: call.id, name: call.name, input: done ? customInput(call) : "", status: done ? "completed" : "in_progress" };
  return { type: "function_call", id, call_id: call.id, name: call.name, arguments: done ? call.arguments : "", status: done ? "completed" : "in_progress" };
}

export function outputItems(req: ResponsesRequest, reply: Reply): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  if (reply.reasoning !== "") items.push(reasoningItem(req, reply));
  if (reply.content !== "" || reply.toolCalls.length === 0) items.push(messageItem(reply, "completed"));
  reply.toolCalls.forEach((_c, i) => items.push(callItem(req, reply, i, true)));
  return items;
}

export function usageOf(reply: Reply): Record<string, unknown> {
  return {
    input_tokens: reply.usage.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: reply.usage.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: reply.usage.inputTokens + reply.usage.outputTokens,
  };
}

/** The Response object; `output` null means "in progress" (the created / in_progress events). */
export function responseObject(req: ResponsesRequest, reply: Reply, final: boolean): Record<string, unknown> {
  const incomplete = final && reply.stopReason === "length";
  return {
    id: reply.id,
    object: "response",
    created_at: reply.created,
    status: final ? (incomplete ? "incomplete" : "completed") : "in_progress",
    error: null,
    incomplete_details: incomplete ? { reason: "max_output_tokens" } : null,
    instructions: null,
    max_output_tokens: req.maxTokens ?? null,
    model: reply.model,
    output: final ? outputItems(req, reply) : [],
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: null,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: null,
    truncation: "disabled",
    usage: final ? usageOf(reply) : null,
    metadata: {},
  };
}

/** Mirrors the input normaliser on our own output items. */
export function echoResponsesMessage(req: ResponsesRequest, reply: Reply): ChatMessage {
  const out: ChatMessage = { role: "assistant", content: reply.content };
  if (reply.reasoning !== "") out.reasoning = reply.reasoning;
  if (reply.toolCalls.length > 0) {
    out.toolCalls = reply.toolCalls.map((c) => ({
      id: c.id,
      name: c.name,
      arguments: req.customTools.has(c.name) ? customArguments(customInput(c)) : c.arguments,
    }));
  }
  return out;
}
