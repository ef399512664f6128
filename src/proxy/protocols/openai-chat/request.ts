import { z } from "zod";
import type { ChatMessage, ToolCall, ToolChoice, ToolSpec } from "../../../chat/types.js";
import { joinText, unsupportedPart } from "../content.js";
import type { ParsedRequest } from "../protocol.js";
import { badField, pickFields, validate } from "../validate.js";

/** OpenAI Chat Completions request: only the fields the proxy uses are validated; the rest is kept in the raw record. */
const Part = z.object({ type: z.string(), text: z.string().optional() }).loose();
const Content = z.union([z.string(), z.array(Part)], { error: "expected a string or an array of content parts" });

const ToolCallSchema = z
  .object({
    id: z.string(),
    type: z.string().optional(),
    function: z.object({ name: z.string(), arguments: z.string() }).loose(),
  })
  .loose();

const Message = z
  .object({
    role: z.enum(["system", "developer", "user", "assistant", "tool", "function"], {
      error: 'expected one of "system", "developer", "user", "assistant", "tool"',
    }),
    content: Content.nullish(),
    name: z.string().optional(),
    tool_calls: z.array(ToolCallSchema).nullish(),
    tool_call_id: z.string().optional(),
    // Qwen/DeepSeek-style reasoning returned by OpenAI-compatible servers; harnesses may echo it back.
    reasoning_content: z.string().nullish(),
    reasoning: z.string().nullish(),
  })
  .loose();

const Tool = z
  .object({
    type: z.string(),
    function: z.object({ name: z.string(), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional() }).loose().optional(),
  })
  .loose();

const ToolChoiceSchema = z.union(
  [z.enum(["none", "auto", "required"]), z.object({ type: z.string(), function: z.object({ name: z.string() }).loose() }).loose()],
  { error: 'expected "none", "auto", "required" or {"type":"function","function":{"name":…}}' },
);

const Body = z
  .object({
    model: z.string({ error: "expected the model name as a string" }),
    messages: z.array(Message).min(1, { error: "at least one message is required" }),
    tools: z.array(Tool).nullish(),
    tool_choice: ToolChoiceSchema.nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().optional() }).loose().nullish(),
    n: z.number().int().nullish(),
    max_tokens: z.number().int().positive().nullish(),
    max_completion_tokens: z.number().int().positive().nullish(),
  })
  .loose();

export interface ChatRequest extends ParsedRequest {
  includeUsage: boolean;
}

const SAMPLING_FIELDS = ["temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed", "presence_penalty", "frequency_penalty", "n", "logprobs", "top_logprobs", "parallel_tool_calls", "reasoning_effort"];

function textOf(content: z.infer<typeof Content> | null | undefined, param: string): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  const texts: string[] = [];
  content.forEach((part, i) => {
    if (part.type === "text" || part.type === "input_text" || part.type === "output_text" || part.type === "refusal") {
      const text = part.type === "refusal" ? (part as { refusal?: unknown }).refusal : part.text;
      if (typeof text !== "string") throw badField(`${param}[${i}].text`, "expected a string");
      texts.push(text);
    } else throw unsupportedPart(`${param}[${i}]`, part.type);
  });
  return joinText(texts);
}

function toolCallsOf(calls: z.infer<typeof ToolCallSchema>[]): ToolCall[] {
  return calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
}

function normaliseMessages(messages: z.infer<typeof Message>[]): ChatMessage[] {
  return messages.map((m, i): ChatMessage => {
    const param = `messages[${i}]`;
    const content = textOf(m.content, `${param}.content`);
    switch (m.role) {
      case "system":
      case "developer":
        return { role: "system", content };
      case "user":
        return { role: "user", content };
      case "assistant": {
        const out: ChatMessage = { role: "assistant", content };
        const reasoning = m.reasoning_content ?? m.reasoning;
        if (reasoning) out.reasoning = reasoning;
        if (m.tool_calls && m.tool_calls.length > 0) out.toolCalls = toolCallsOf(m.tool_calls);
        return out;
      }
      case "tool": {
        if (m.tool_call_id === undefined) throw badField(`${param}.tool_call_id`, "a tool message needs the id of the call it answers");
        const out: ChatMessage = { role: "tool", content, toolCallId: m.tool_call_id };
        if (m.name) out.name = m.name;
        return out;
      }
      case "function":
        throw badField(`${param}.role`, 'the legacy "function" role is not supported; use "tool" messages with tool_call_id');
    }
  });
}

function normaliseTools(tools: z.infer<typeof Tool>[]): { specs: ToolSpec[]; omitted: string[] } {
  const specs: ToolSpec[] = [];
  const omitted: string[] = [];
  tools.forEach((t, i) => {
    if (t.type !== "function") {
      omitted.push(t.type);
      return;
    }
    if (!t.function) throw badField(`tools[${i}].function`, "a function tool needs its function");
    const spec: ToolSpec = { name: t.function.name, parameters: t.function.parameters ?? { type: "object", properties: {} } };
    if (t.function.description !== undefined) spec.description = t.function.description;
    specs.push(spec);
  });
  return { specs, omitted };
}

function normaliseToolChoice(c: z.infer<typeof ToolChoiceSchema> | null | undefined): ToolChoice | undefined {
  if (c === null || c === undefined) return undefined;
  if (typeof c === "string") return c;
  return { name: c.function.name };
}

export function parseChatRequest(raw: unknown): ChatRequest {
  const body = validate(Body, raw);
  if (body.n !== null && body.n !== undefined && body.n !== 1) throw badField("n", "only n = 1 is supported");
  const { specs: tools, omitted } = normaliseTools(body.tools ?? []);
  const conversation = { messages: normaliseMessages(body.messages), tools, toolChoice: normaliseToolChoice(body.tool_choice) };
  return {
    model: body.model,
    stream: body.stream === true,
    conversation,
    samplingRequested: pickFields(body, SAMPLING_FIELDS),
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
    includeUsage: body.stream_options?.include_usage === true,
    omittedTools: omitted,
  };
}
