import { z } from "zod";
import type { ChatMessage, ToolCall, ToolChoice, ToolSpec } from "../../../chat/types.js";
import { joinText, unsupportedPart } from "../content.js";
import type { ParsedRequest } from "../protocol.js";
import { badField, pickFields, validate } from "../validate.js";
import { decodeReasoning } from "./reasoning.js";

/** OpenAI Responses request. Input items are validated per type in code, to name unsupported ones clearly. */
const Item = z.object({ type: z.string().optional() }).loose();

const Tool = z
  .object({
    type: z.string(),
    name: z.string().optional(),
    description: z.string().nullish(),
    parameters: z.record(z.string(), z.unknown()).nullish(),
    format: z.record(z.string(), z.unknown()).nullish(),
  })
  .loose();

const ToolChoiceSchema = z.union([z.enum(["none", "auto", "required"]), z.object({ type: z.string(), name: z.string().optional() }).loose()], {
  error: 'expected "none", "auto", "required" or {"type":"function","name":…}',
});

const Body = z
  .object({
    model: z.string({ error: "expected the model name as a string" }),
    input: z.union([z.string(), z.array(Item)], { error: "expected a string or an array of input items" }),
    instructions: z.string().nullish(),
    tools: z.array(Tool).nullish(),
    tool_choice: ToolChoiceSchema.nullish(),
    stream: z.boolean().nullish(),
    max_output_tokens: z.number().int().positive().nullish(),
    previous_response_id: z.string().nullish(),
    include: z.array(z.string()).nullish(),
  })
  .loose();

export interface ResponsesRequest extends ParsedRequest {
  /** Names of Codex-style freeform (`custom`) tools: their calls go back as `custom_tool_call` items. */
  customTools: ReadonlySet<string>;
  /** The client asked for `reasoning.encrypted_content` (stateless clients such as Codex with store: false). */
  includeEncryptedReasoning: boolean;
}

const SAMPLING_FIELDS = ["temperature", "top_p", "max_output_tokens", "reasoning", "parallel_tool_calls", "tool_choice", "text", "truncation"];

/** Hosted tools run on OpenAI's side; a self-hosted policy cannot call them, so they are left out of the prompt. */
type ItemT = z.infer<typeof Item>;

function str(item: ItemT, field: string, param: string): string {
  const v = item[field];
  if (typeof v !== "string") throw badField(`${param}.${field}`, "expected a string");
  return v;
}

function partsText(content: unknown, param: string): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw badField(param, "expected a string or an array of content parts");
  const texts: string[] = [];
  content.forEach((p: unknown, i) => {
    const part = (p ?? {}) as Record<string, unknown>;
    const type = typeof part.type === "string" ? part.type : "(missing)";
    if (type === "input_text" || type === "output_text" || type === "text") {
      if (typeof part.text !== "string") throw badField(`${param}[${i}].text`, "expected a string");
      texts.push(part.text);
    } else if (type === "refusal") {
      texts.push(typeof part.refusal === "string" ? part.refusal : "");
    } else throw unsupportedPart(`${param}[${i}]`, type);
  });
  return joinText(texts);
}

/** Freeform tool input travels as `{"input": text}` in the normalised conversation. */
export function customArguments(input: string): string {
  return JSON.stringify({ input });
}

function normaliseInput(items: ItemT[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  const toolNames = new Map<string, string>();
  // Consecutive reasoning / assistant message / call items form one assistant turn.
  let turn: ChatMessage | null = null;
  const flush = (): void => {
    if (turn) out.push(turn);
    turn = null;
  };
  const assistant = (): ChatMessage => (turn ??= { role: "assistant", content: "" });
  const addCall = (call: ToolCall): void => {
    toolNames.set(call.id, call.name);
    (assistant().toolCalls ??= []).push(call);
  };
  items.forEach((item, i) => {
    const param = `input[${i}]`;
    const type = item.type ?? "message";
    switch (type) {
      case "message": {
        const role = item.role;
        const content = partsText(item.content, `${param}.content`);
        if (role === "assistant") {
          const t = turn as ChatMessage | null;
          if (t && (t.content !== "" || t.toolCalls)) flush();
          assistant().content = content;
        } else if (role === "user" || role === "system" || role === "developer") {
          flush();
          out.push({ role: role === "user" ? "user" : "system", content });
        } else throw badField(`${param}.role`, 'expected "user", "assistant", "system" or "developer"');
        break;
      }
      case "reasoning": {
        const t = turn as ChatMessage | null;
        if (t && (t.content !== "" || t.toolCalls)) flush();
        const text = decodeReasoning(item);
        if (text !== "") {
          const a = assistant();
          a.reasoning = a.reasoning === undefined ? text : joinText([a.reasoning, text]);
        }
        break;
      }
      case "function_call":
        addCall({ id: str(item, "call_id", param), name: str(item, "name", param), arguments: str(item, "arguments", param) });
        break;
      case "custom_tool_call":
        addCall({ id: str(item, "call_id", param), name: str(item, "name", param), arguments: customArguments(str(item, "input", param)) });
        break;
      case "function_call_output":
      case "custom_tool_call_output": {
        flush();
        const id = str(item, "call_id", param);
        const msg: ChatMessage = { role: "tool", content: partsText(item.output, `${param}.output`), toolCallId: id };
        const name = toolNames.get(id);
        if (name !== undefined) msg.name = name;
        out.push(msg);
        break;
      }
      case "item_reference":
        throw badField(param, "item_reference needs server-side storage, which this proxy does not keep; send full items (store: false)", "unsupported_content");
      default:
        throw badField(`${param}.type`, `input item type "${type}" is not supported`, "unsupported_content");
    }
  });
  flush();
  return out;
}

function normaliseTools(tools: z.infer<typeof Tool>[]): { specs: ToolSpec[]; custom: Set<string>; omitted: string[] } {
  const specs: ToolSpec[] = [];
  const custom = new Set<string>();
  const omitted: string[] = [];
  tools.forEach((t, i) => {
    // Hosted tools (web_search, tool_search, mcp, …) run on the provider's side: the policy cannot serve them.
    if (t.type !== "function" && t.type !== "custom") {
      omitted.push(t.name === undefined ? t.type : `${t.type}:${t.name}`);
      return;
    }
    if (t.name === undefined) throw badField(`tools[${i}].name`, "expected a string");
    if (t.type === "function") {
      const spec: ToolSpec = { name: t.name, parameters: t.parameters ?? { type: "object", properties: {} } };
      if (t.description) spec.description = t.description;
      specs.push(spec);
      return;
    }
    custom.add(t.name);
    const description = `${t.description ?? ""}${t.description ? "\n\n" : ""}Freeform tool: put the raw text input in "input".`;
    specs.push({ name: t.name, description, parameters: { type: "object", properties: { input: { type: "string" } }, required: ["input"] } });
  });
  return { specs, custom, omitted };
}

function normaliseToolChoice(c: z.infer<typeof ToolChoiceSchema> | null | undefined): ToolChoice | undefined {
  if (c === null || c === undefined) return undefined;
  if (typeof c === "string") return c;
  if (c.name === undefined) throw badField("tool_choice.name", "a forced tool choice needs a name");
  return { name: c.name };
}

export function parseResponsesRequest(raw: unknown): ResponsesRequest {
  const body = validate(Body, raw);
  if (body.previous_response_id) {
    throw badField("previous_response_id", "this proxy keeps no server-side conversation state; send the whole conversation in input (store: false)");
  }
  const messages: ChatMessage[] = [];
  if (body.instructions) messages.push({ role: "system", content: body.instructions });
  if (typeof body.input === "string") messages.push({ role: "user", content: body.input });
  else messages.push(...normaliseInput(body.input));
  if (messages.length === 0) throw badField("input", "the conversation is empty");
  const { specs, custom, omitted } = normaliseTools(body.tools ?? []);
  return {
    model: body.model,
    stream: body.stream === true,
    conversation: { messages, tools: specs, toolChoice: normaliseToolChoice(body.tool_choice) },
    samplingRequested: pickFields(body, SAMPLING_FIELDS),
    maxTokens: body.max_output_tokens ?? undefined,
    customTools: custom,
    includeEncryptedReasoning: (body.include ?? []).includes("reasoning.encrypted_content"),
    omittedTools: omitted,
  };
}
