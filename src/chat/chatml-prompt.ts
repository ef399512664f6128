import { parseAssistantOutput } from "./parse-output.js";
import type { ChatMessage, ToolCall, ToolSpec } from "./types.js";

const TOOLS_HEADER = "# Tools\nFunctions you may call:\n<tools>\n";
const TURN = /<\|im_start\|>(system|user|assistant)([\s\S]*?)<\|im_end\|>\n?/g;
const TOOL_TURN = /^(?:\n<tool_response>\n[\s\S]*?\n<\/tool_response>)+$/;

/**
 * Best-effort inverse of templates/chatml-tools.jinja: recovers the conversation and tools from a rendered prompt.
 * `render(parse(render(c)))` equals `render(c)` for conversations whose texts do not themselves contain the
 * template's markers. Call ids are invented (`call_<turn>_<k>`) and tool results are matched to calls in order.
 * Used by the scripted engine when it is driven with bare prompt tokens (no conversation context).
 */
export function parseChatMLPrompt(text: string): { messages: ChatMessage[]; tools: ToolSpec[] } {
  const messages: ChatMessage[] = [];
  let tools: ToolSpec[] = [];
  let pendingIds: string[] = [];
  let turn = 0;
  for (const m of text.matchAll(TURN)) {
    const role = m[1] as "system" | "user" | "assistant";
    const body = m[2] as string;
    if (role === "system") {
      let content = body.startsWith("\n") ? body.slice(1) : body;
      if (m.index === 0) {
        const at = content.indexOf(TOOLS_HEADER);
        if (at >= 0 && (at === 0 || content.slice(0, at).endsWith("\n\n"))) {
          tools = parseToolLines(content.slice(at + TOOLS_HEADER.length));
          content = at === 0 ? "" : content.slice(0, at - 2);
          if (at === 0) continue;
        }
      }
      messages.push({ role: "system", content });
    } else if (role === "user" && TOOL_TURN.test(body)) {
      const results = body.slice("\n<tool_response>\n".length, -"\n</tool_response>".length).split("\n</tool_response>\n<tool_response>\n");
      results.forEach((content, k) => messages.push({ role: "tool", content, toolCallId: pendingIds[k] ?? `call_unmatched_${turn}_${k}` }));
      pendingIds = [];
    } else if (role === "user") {
      messages.push({ role: "user", content: body.startsWith("\n") ? body.slice(1) : body });
    } else {
      const msg = assistantFromText(body.startsWith("\n") ? body.slice(1) : body, turn);
      pendingIds = (msg.toolCalls ?? []).map((c) => c.id);
      messages.push(msg);
    }
    turn++;
  }
  return { messages, tools };
}

function parseToolLines(rest: string): ToolSpec[] {
  const end = rest.indexOf("\n</tools>");
  const out: ToolSpec[] = [];
  for (const line of (end < 0 ? rest : rest.slice(0, end)).split("\n")) {
    try {
      const t = JSON.parse(line) as { name?: unknown; description?: unknown; parameters?: unknown };
      if (typeof t.name !== "string") continue;
      const spec: ToolSpec = { name: t.name, parameters: t.parameters !== null && typeof t.parameters === "object" ? (t.parameters as Record<string, unknown>) : {} };
      if (typeof t.description === "string") spec.description = t.description;
      out.push(spec);
    } catch {
      // not a tool line
    }
  }
  return out;
}

function assistantFromText(text: string, turn: number): ChatMessage {
  const parsed = parseAssistantOutput(text, { endOfTurnTexts: [] });
  // Valid calls and blocks whose arguments are a plain string, in the order they were written.
  const blocks: { at: number; name: string; args: string }[] = parsed.toolCalls.map((c, i) => ({ at: parsed.spans.toolCalls[i]?.block.start ?? 0, name: c.name, args: c.argumentsText }));
  for (const bad of parsed.malformed) {
    try {
      const v = JSON.parse(bad.text.slice("<tool_call>".length, -"</tool_call>".length)) as { name?: unknown; arguments?: unknown };
      if (typeof v.name === "string" && typeof v.arguments === "string") blocks.push({ at: bad.span.start, name: v.name, args: v.arguments });
    } catch {
      // dropped: not a call the template could have written
    }
  }
  blocks.sort((a, b) => a.at - b.at);
  const msg: ChatMessage = { role: "assistant", content: parsed.content };
  if (parsed.reasoning !== undefined) msg.reasoning = parsed.reasoning;
  if (blocks.length > 0) msg.toolCalls = blocks.map((b, k): ToolCall => ({ id: `call_${turn}_${k}`, name: b.name, arguments: b.args }));
  return msg;
}
