import { UserError } from "../core/errors.js";
import { argumentsForTemplate } from "./hf-messages.js";
import type { ChatRenderer } from "./renderer.js";
import type { ChatMessage, ToolSpec } from "./types.js";

/**
 * A hand-written equivalent of templates/chatml-tools.jinja, because rendering sits on the proxy's hot path and the
 * Jinja interpreter costs about 0.2 ms per thousand tokens. The template stays the source of truth: tests render random
 * conversations with both and require identical text, and `loadCodec` only uses this class for a model directory
 * whose template is byte-identical to the default one.
 */
export class ChatMLToolsRenderer implements ChatRenderer {
  readonly endOfTurn = "<|im_end|>";

  render(messages: readonly ChatMessage[], tools: readonly ToolSpec[], options: { addGenerationPrompt: boolean }): string {
    let out = "";
    const first = messages[0];
    const firstSystem = first !== undefined && first.role === "system";
    if (tools.length > 0 || firstSystem) {
      out += "<|im_start|>system\n";
      if (firstSystem) out += first.content;
      if (tools.length > 0) {
        if (firstSystem && first.content) out += "\n\n";
        out += toolsBlock(tools);
      }
      out += "<|im_end|>\n";
    }
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i] as ChatMessage;
      switch (m.role) {
        case "system":
          if (i > 0) out += "<|im_start|>system\n" + m.content + "<|im_end|>\n";
          break;
        case "user":
          out += "<|im_start|>user\n" + m.content + "<|im_end|>\n";
          break;
        case "assistant": {
          const content = m.content.trim();
          const reasoning = (m.reasoning ?? "").trim();
          const calls = m.toolCalls ?? [];
          out += "<|im_start|>assistant\n";
          if (reasoning) {
            out += "<think>\n" + reasoning + "\n</think>";
            if (content || calls.length > 0) out += "\n\n";
          }
          out += content;
          calls.forEach((c, k) => {
            if (content || k > 0) out += "\n";
            out += '<tool_call>\n{"name": ' + pyJson(c.name) + ', "arguments": ' + pyJson(argumentsForTemplate(c.arguments)) + "}\n</tool_call>";
          });
          out += "<|im_end|>\n";
          break;
        }
        case "tool":
          if (i === 0 || messages[i - 1]?.role !== "tool") out += "<|im_start|>user";
          out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
          if (i === messages.length - 1 || messages[i + 1]?.role !== "tool") out += "<|im_end|>\n";
          break;
        default:
          throw new UserError("chat_template_rejected", `the chat template rejected the conversation: unsupported message role: ${String((m as { role: unknown }).role)}`);
      }
    }
    if (options.addGenerationPrompt) out += "<|im_start|>assistant\n";
    return out;
  }

  /**
   * What follows the generation prompt for this assistant message, through `<|im_end|>`. In this template an assistant
   * turn renders the same whatever precedes it, so this skips rendering the whole conversation twice.
   */
  renderTurnCompletion(message: ChatMessage): string {
    const turn = this.render([message], [], { addGenerationPrompt: false });
    return turn.slice("<|im_start|>assistant\n".length, -1);
  }
}

/**
 * The rendered tool list, by the tools' JSON. A harness sends the same tools with every call (often ~30k characters),
 * and the native JSON key is several times cheaper than writing Python-style JSON again.
 */
const toolBlocks = new Map<string, string>();
const TOOL_BLOCKS = 32;

function toolsBlock(tools: readonly ToolSpec[]): string {
  const key = JSON.stringify(tools);
  let block = toolBlocks.get(key);
  if (block === undefined) {
    block = "# Tools\nFunctions you may call:\n<tools>";
    for (const t of tools) block += "\n" + toolJson(t);
    block += '\n</tools>\nTo call one, write:\n<tool_call>\n{"name": <name>, "arguments": <JSON object>}\n</tool_call>';
    if (toolBlocks.size >= TOOL_BLOCKS) toolBlocks.delete(toolBlocks.keys().next().value as string);
    toolBlocks.set(key, block);
  }
  return block;
}

function toolJson(t: ToolSpec): string {
  const fn: Record<string, unknown> = t.description === undefined ? { name: t.name, parameters: t.parameters } : { name: t.name, description: t.description, parameters: t.parameters };
  return pyJson(fn);
}

/** JSON as Jinja's `tojson` writes it (Python's `json.dumps` separators ", " and ": "). */
export function pyJson(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(pyJson).join(", ") + "]";
  const parts: string[] = [];
  for (const [k, x] of Object.entries(v)) parts.push(JSON.stringify(k) + ": " + pyJson(x));
  return "{" + parts.join(", ") + "}";
}
