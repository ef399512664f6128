import type { ChatMessage, ToolSpec } from "./types.js";

/** The message shape Hugging Face chat templates are written against (`apply_chat_template`). */
export interface HfMessage {
  role: string;
  content: string;
  reasoning_content?: string;
  tool_calls?: { id: string; type: "function"; function: { name: string; arguments: unknown } }[];
  tool_call_id?: string;
  name?: string;
}

export interface HfTool {
  type: "function";
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

/**
 * Tool-call arguments as templates expect them: a parsed object (templates `tojson` it), or the raw text when it is
 * not a JSON object (templates that test `arguments is string` print it verbatim).
 */
export function argumentsForTemplate(text: string): unknown {
  try {
    const v: unknown = JSON.parse(text);
    if (v !== null && typeof v === "object" && !Array.isArray(v)) return v;
  } catch {
    // not JSON: keep the text
  }
  return text;
}

export function toHfMessage(m: ChatMessage): HfMessage {
  const out: HfMessage = { role: m.role, content: m.content };
  if (m.reasoning !== undefined) out.reasoning_content = m.reasoning;
  if (m.toolCalls && m.toolCalls.length > 0) {
    out.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: argumentsForTemplate(c.arguments) } }));
  }
  if (m.toolCallId !== undefined) out.tool_call_id = m.toolCallId;
  if (m.name !== undefined) out.name = m.name;
  return out;
}

export function toHfTool(t: ToolSpec): HfTool {
  const fn: HfTool["function"] =
    t.description === undefined ? { name: t.name, parameters: t.parameters } : { name: t.name, description: t.description, parameters: t.parameters };
  return { type: "function", function: fn };
}
