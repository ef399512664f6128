import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { expect } from "vitest";
import type { ChatMessage, Conversation } from "../../src/chat/types.js";
import { anthropicMessages, openaiChat, openaiResponses } from "../../src/proxy/protocols/index.js";
import { runProtocolContract, type Body, type ErrorKind, type ProtocolWire } from "./protocol-contract.js";

// The three protocol adapters, each run through the shared contract. A wire writes conversations the way the
// protocol's clients do and drives the protocol's official SDK.

/** JSON round trip: the SDKs return class instances; the contract compares plain wire data. */
const plain = (x: unknown): Body => JSON.parse(JSON.stringify(x)) as Body;

/** Status, type, code and param of each failure; the contract's bad requests get the `model` field wrong. */
const OPENAI_ERRORS: Record<ErrorKind, [number, string, string, string | null]> = {
  invalid_request: [400, "invalid_request_error", "invalid_request", "model"],
  unauthorized: [401, "authentication_error", "unauthorized", null],
  model_not_found: [404, "invalid_request_error", "model_not_found", "model"],
  engine_failed: [500, "server_error", "scripted_failed", null],
  engine_overloaded: [503, "server_error", "engine_overloaded", null],
};
const openaiStatus = Object.fromEntries(Object.entries(OPENAI_ERRORS).map(([k, v]) => [k, v[0]])) as Record<ErrorKind, number>;
function expectOpenAIError(body: Body, kind: ErrorKind): void {
  const [, type, code, param] = OPENAI_ERRORS[kind];
  expect(body).toEqual({ error: { message: expect.any(String), type, code, param } });
}

function chatMessage(m: ChatMessage): Body {
  if (m.role === "tool") return { role: "tool", tool_call_id: m.toolCallId, content: m.content, ...(m.name ? { name: m.name } : {}) };
  if (m.role !== "assistant") return { role: m.role, content: m.content };
  const out: Body = { role: "assistant", content: m.content === "" && m.toolCalls ? null : m.content };
  if (m.reasoning !== undefined) out.reasoning_content = m.reasoning;
  if (m.toolCalls) out.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
  return out;
}

const chatWire: ProtocolWire = {
  adapter: openaiChat,
  route: "/v1/chat/completions",
  request: (c: Conversation) => ({
    model: "policy",
    messages: c.messages.map(chatMessage),
    ...(c.tools.length > 0 ? { tools: c.tools.map((t) => ({ type: "function", function: t })) } : {}),
  }),
  appendAnswer: (req, res) => ({ ...req, messages: [...(req.messages as Body[]), (res.choices as { message: Body }[])[0]?.message] }),
  send: async (p, apiKey, req, stream) => {
    const client = p.openai(apiKey);
    if (!stream) return plain(await client.chat.completions.create(req as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming));
    const params = { ...req, stream_options: { include_usage: true } } as unknown as Parameters<OpenAI["chat"]["completions"]["stream"]>[0];
    return plain(await client.chat.completions.stream(params).finalChatCompletion());
  },
  // The SDK's stream helper adds its structured-output slot.
  sdkOnlyKeys: ["parsed"],
  errorStatus: openaiStatus,
  expectErrorBody: expectOpenAIError,
};

function responsesItems(m: ChatMessage, i: number): Body[] {
  if (m.role === "tool") return [{ type: "function_call_output", call_id: m.toolCallId, output: m.content }];
  if (m.role === "system") return [{ role: "developer", content: m.content }];
  if (m.role === "user") return [{ role: "user", content: [{ type: "input_text", text: m.content }] }];
  const items: Body[] = [];
  if (m.reasoning !== undefined) items.push({ type: "reasoning", id: `rs_${i}`, summary: [], content: [{ type: "reasoning_text", text: m.reasoning }] });
  if (m.content !== "") items.push({ type: "message", role: "assistant", content: [{ type: "output_text", text: m.content, annotations: [] }] });
  for (const c of m.toolCalls ?? []) items.push({ type: "function_call", call_id: c.id, name: c.name, arguments: c.arguments });
  return items;
}

const responsesWire: ProtocolWire = {
  adapter: openaiResponses,
  route: "/v1/responses",
  // A leading system message travels as `instructions`, the rest as developer messages.
  request: (c: Conversation) => {
    const [first, ...rest] = c.messages;
    const lead = first?.role === "system" ? { instructions: first.content } : {};
    const messages = first?.role === "system" ? rest : c.messages;
    return {
      model: "policy",
      store: false,
      ...lead,
      input: messages.flatMap(responsesItems),
      ...(c.tools.length > 0 ? { tools: c.tools.map((t) => ({ type: "function", strict: false, ...t })) } : {}),
    };
  },
  appendAnswer: (req, res) => ({ ...req, input: [...(req.input as Body[]), ...(res.output as Body[])] }),
  send: async (p, apiKey, req, stream) => {
    const client = p.openai(apiKey);
    if (!stream) return plain(await client.responses.create(req as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming));
    const events = client.responses.stream(req as unknown as OpenAI.Responses.ResponseCreateParamsStreaming);
    // A stream that fails midway ends with `response.failed`, as OpenAI's does. The SDK's finalResponse() then
    // returns the last in-progress snapshot without complaint, so a client must watch for the event (Codex does).
    for await (const ev of events) {
      if (ev.type === "response.failed") throw new Error(`response.failed: ${ev.response.error?.code ?? "?"}: ${ev.response.error?.message ?? ""}`);
    }
    return plain(await events.finalResponse());
  },
  // The SDK adds `output_text` to non-streamed responses only, its structured-output slots to streamed ones.
  sdkOnlyKeys: ["output_text", "output_parsed", "parsed", "parsed_arguments"],
  errorStatus: openaiStatus,
  expectErrorBody: expectOpenAIError,
};

const ANTHROPIC_ERRORS: Record<ErrorKind, [number, string]> = {
  invalid_request: [400, "invalid_request_error"],
  unauthorized: [401, "authentication_error"],
  model_not_found: [404, "not_found_error"],
  engine_failed: [500, "api_error"],
  // Anthropic signals a retryable overload with 529.
  engine_overloaded: [529, "overloaded_error"],
};

function anthropicMessagesOf(messages: readonly ChatMessage[]): Body[] {
  const out: { role: string; content: Body[] }[] = [];
  const userBlocks = (): Body[] => {
    const last = out.at(-1);
    if (last?.role === "user") return last.content;
    const next = { role: "user", content: [] as Body[] };
    out.push(next);
    return next.content;
  };
  for (const m of messages) {
    if (m.role === "system") out.push({ role: "system", content: [{ type: "text", text: m.content }] });
    else if (m.role === "user") userBlocks().push({ type: "text", text: m.content });
    else if (m.role === "tool") userBlocks().push({ type: "tool_result", tool_use_id: m.toolCallId, content: m.content });
    else {
      const blocks: Body[] = [];
      if (m.reasoning !== undefined) blocks.push({ type: "thinking", thinking: m.reasoning, signature: "sig" });
      if (m.content !== "") blocks.push({ type: "text", text: m.content });
      for (const c of m.toolCalls ?? []) blocks.push({ type: "tool_use", id: c.id, name: c.name, input: JSON.parse(c.arguments) as unknown });
      out.push({ role: "assistant", content: blocks });
    }
  }
  return out;
}

const anthropicWire: ProtocolWire = {
  adapter: anthropicMessages,
  route: "/v1/messages",
  // A leading system message travels as `system`; later ones as system-role messages (as Claude Code sends them).
  request: (c: Conversation) => {
    const [first, ...rest] = c.messages;
    const lead = first?.role === "system" ? { system: first.content } : {};
    return {
      model: "policy",
      max_tokens: 1000,
      ...lead,
      messages: anthropicMessagesOf(first?.role === "system" ? rest : c.messages),
      ...(c.tools.length > 0 ? { tools: c.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })) } : {}),
    };
  },
  appendAnswer: (req, res) => ({ ...req, messages: [...(req.messages as Body[]), { role: "assistant", content: res.content }] }),
  send: async (p, apiKey, req, stream) => {
    const client = p.anthropic(apiKey);
    if (!stream) return plain(await client.messages.create(req as unknown as Anthropic.MessageCreateParamsNonStreaming));
    return plain(await client.messages.stream(req as unknown as Anthropic.MessageStreamParams).finalMessage());
  },
  sdkOnlyKeys: ["parsed_output"],
  errorStatus: Object.fromEntries(Object.entries(ANTHROPIC_ERRORS).map(([k, v]) => [k, v[0]])) as Record<ErrorKind, number>,
  expectErrorBody: (body, kind) => expect(body).toEqual({ type: "error", error: { type: ANTHROPIC_ERRORS[kind][1], message: expect.any(String) } }),
};

runProtocolContract(chatWire);
runProtocolContract(responsesWire);
runProtocolContract(anthropicWire);
