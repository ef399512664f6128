import { z } from "zod";
import type { ChatMessage, ToolChoice, ToolSpec } from "../../../chat/types.js";
import { joinText, unsupportedPart } from "../content.js";
import type { ParsedRequest } from "../protocol.js";
import { badField, pickFields, validate } from "../validate.js";

/** Anthropic Messages request. Content blocks are validated per type in code, to name unsupported ones clearly. */
const Block = z.object({ type: z.string() }).loose();
const Content = z.union([z.string(), z.array(Block)], { error: "expected a string or an array of content blocks" });

const Message = z
  .object({
    // "system" is not in Anthropic's schema, but Claude Code sends an environment block that way.
    role: z.enum(["user", "assistant", "system"], { error: 'expected "user" or "assistant"' }),
    content: Content,
  })
  .loose();

const Tool = z
  .object({
    type: z.string().optional(),
    name: z.string(),
    description: z.string().optional(),
    input_schema: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();

const ToolChoiceSchema = z
  .object({ type: z.enum(["auto", "any", "tool", "none"]), name: z.string().optional(), disable_parallel_tool_use: z.boolean().optional() })
  .loose();

const Body = z
  .object({
    model: z.string({ error: "expected the model name as a string" }),
    messages: z.array(Message).min(1, { error: "at least one message is required" }),
    system: z.union([z.string(), z.array(Block)], { error: "expected a string or an array of text blocks" }).optional(),
    tools: z.array(Tool).optional(),
    tool_choice: ToolChoiceSchema.optional(),
    stream: z.boolean().optional(),
    max_tokens: z.number().int().positive().optional(),
  })
  .loose();

export type AnthropicRequest = ParsedRequest;

const SAMPLING_FIELDS = ["temperature", "top_p", "top_k", "max_tokens", "stop_sequences", "thinking", "tool_choice"];

type BlockT = z.infer<typeof Block>;

function str(block: BlockT, field: string, param: string): string {
  const v = block[field];
  if (typeof v !== "string") throw badField(`${param}.${field}`, "expected a string");
  return v;
}

function textBlocks(blocks: BlockT[], param: string): string {
  const texts: string[] = [];
  blocks.forEach((b, i) => {
    if (b.type === "text") texts.push(str(b, "text", `${param}[${i}]`));
    else throw unsupportedPart(`${param}[${i}]`, b.type);
  });
  return joinText(texts);
}

function toolResultContent(block: BlockT, param: string): string {
  const c = block.content;
  if (c === undefined || c === null) return "";
  if (typeof c === "string") return c;
  if (!Array.isArray(c)) throw badField(`${param}.content`, "expected a string or an array of text blocks");
  return textBlocks(c as BlockT[], `${param}.content`);
}

function userMessages(content: BlockT[], param: string, out: ChatMessage[], toolNames: Map<string, string>): void {
  let texts: string[] = [];
  const flush = (): void => {
    if (texts.length > 0) out.push({ role: "user", content: joinText(texts) });
    texts = [];
  };
  content.forEach((b, i) => {
    const p = `${param}[${i}]`;
    switch (b.type) {
      case "text":
        texts.push(str(b, "text", p));
        break;
      case "tool_result": {
        flush();
        const id = str(b, "tool_use_id", p);
        const msg: ChatMessage = { role: "tool", content: toolResultContent(b, p), toolCallId: id };
        const name = toolNames.get(id);
        if (name !== undefined) msg.name = name;
        out.push(msg);
        break;
      }
      default:
        throw unsupportedPart(p, b.type);
    }
  });
  flush();
}

function assistantMessage(content: BlockT[], param: string, toolNames: Map<string, string>): ChatMessage {
  const texts: string[] = [];
  const thinking: string[] = [];
  const msg: ChatMessage = { role: "assistant", content: "" };
  content.forEach((b, i) => {
    const p = `${param}[${i}]`;
    switch (b.type) {
      case "text":
        texts.push(str(b, "text", p));
        break;
      case "thinking":
        thinking.push(str(b, "thinking", p));
        break;
      case "redacted_thinking":
        // Opaque to us and never produced by this proxy: nothing to render.
        break;
      case "tool_use": {
        const id = str(b, "id", p);
        const name = str(b, "name", p);
        const input = b.input ?? {};
        if (typeof input !== "object" || input === null || Array.isArray(input)) throw badField(`${p}.input`, "expected an object");
        toolNames.set(id, name);
        (msg.toolCalls ??= []).push({ id, name, arguments: JSON.stringify(input) });
        break;
      }
      default:
        throw unsupportedPart(p, b.type);
    }
  });
  msg.content = joinText(texts);
  if (thinking.length > 0) msg.reasoning = joinText(thinking);
  return msg;
}

function normaliseTools(tools: z.infer<typeof Tool>[]): { specs: ToolSpec[]; omitted: string[] } {
  const specs: ToolSpec[] = [];
  const omitted: string[] = [];
  for (const t of tools) {
    // Server tools (web_search_…, code_execution_…) run on Anthropic's side: the policy cannot serve them.
    if (t.type !== undefined && t.type !== "custom") {
      omitted.push(`${t.type}:${t.name}`);
      continue;
    }
    const spec: ToolSpec = { name: t.name, parameters: t.input_schema ?? { type: "object", properties: {} } };
    if (t.description !== undefined) spec.description = t.description;
    specs.push(spec);
  }
  return { specs, omitted };
}

function normaliseToolChoice(c: z.infer<typeof ToolChoiceSchema> | undefined): ToolChoice | undefined {
  if (!c) return undefined;
  switch (c.type) {
    case "auto":
      return "auto";
    case "any":
      return "required";
    case "none":
      return "none";
    case "tool":
      if (!c.name) throw badField("tool_choice.name", 'tool_choice of type "tool" needs a name');
      return { name: c.name };
  }
}

export function parseAnthropicRequest(raw: unknown): AnthropicRequest {
  const body = validate(Body, raw);
  const messages: ChatMessage[] = [];
  if (body.system !== undefined) {
    const system = typeof body.system === "string" ? body.system : textBlocks(body.system, "system");
    messages.push({ role: "system", content: system });
  }
  const toolNames = new Map<string, string>();
  body.messages.forEach((m, i) => {
    const param = `messages[${i}].content`;
    // As the Messages API: every turn has content, except a final assistant turn (a prefill).
    const empty = typeof m.content === "string" ? m.content === "" : m.content.length === 0;
    if (empty && !(m.role === "assistant" && i === body.messages.length - 1)) throw badField(param, "a message needs non-empty content (only a final assistant message may be empty)");
    const blocks: BlockT[] = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (m.role === "user") userMessages(blocks, param, messages, toolNames);
    else if (m.role === "system") messages.push({ role: "system", content: textBlocks(blocks, param) });
    else messages.push(assistantMessage(blocks, param, toolNames));
  });
  const { specs, omitted } = normaliseTools(body.tools ?? []);
  return {
    model: body.model,
    stream: body.stream === true,
    conversation: { messages, tools: specs, toolChoice: normaliseToolChoice(body.tool_choice) },
    samplingRequested: pickFields(body, SAMPLING_FIELDS),
    maxTokens: body.max_tokens,
    omittedTools: omitted,
  };
}
