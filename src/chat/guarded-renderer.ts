import { escapeSpecialText, specialTextPattern } from "../tokenizer/special-escape.js";
import type { Tokenizer } from "../tokenizer/types.js";
import type { ChatRenderer } from "./renderer.js";
import type { ChatMessage, ToolSpec } from "./types.js";

/**
 * A renderer whose request text cannot become control tokens: every string that came from the request (message
 * content, reasoning, tool-call names, ids and arguments, tool definitions) has its special-token texts marked as
 * literal before the template sees it (src/tokenizer/special-escape.ts); only what the template itself prints stays
 * special. Escaped copies are cached per message and tool object: the proxy renders the same history on every call.
 */
export class SpecialTextGuard implements ChatRenderer {
  readonly endOfTurn: string;
  private readonly pattern: RegExp;
  private readonly messages = new WeakMap<ChatMessage, ChatMessage>();
  private readonly tools = new WeakMap<ToolSpec, ToolSpec>();

  constructor(
    readonly inner: ChatRenderer,
    specials: Iterable<string>,
  ) {
    this.endOfTurn = inner.endOfTurn;
    this.pattern = specialTextPattern(specials);
  }

  render(messages: readonly ChatMessage[], tools: readonly ToolSpec[], options: { addGenerationPrompt: boolean }): string {
    return this.inner.render(
      messages.map((m) => this.message(m)),
      tools.map((t) => this.tool(t)),
      options,
    );
  }

  private text(s: string): string {
    return escapeSpecialText(s, this.pattern);
  }

  private message(m: ChatMessage): ChatMessage {
    const hit = this.messages.get(m);
    if (hit) return hit;
    const out: ChatMessage = { ...m, content: this.text(m.content) };
    if (m.reasoning !== undefined) out.reasoning = this.text(m.reasoning);
    if (m.name !== undefined) out.name = this.text(m.name);
    if (m.toolCallId !== undefined) out.toolCallId = this.text(m.toolCallId);
    if (m.toolCalls) out.toolCalls = m.toolCalls.map((c) => ({ id: this.text(c.id), name: this.text(c.name), arguments: this.text(c.arguments) }));
    this.messages.set(m, out);
    return out;
  }

  private tool(t: ToolSpec): ToolSpec {
    const hit = this.tools.get(t);
    if (hit) return hit;
    const out: ToolSpec = { ...t, name: this.text(t.name), parameters: this.json(t.parameters) as Record<string, unknown> };
    if (t.description !== undefined) out.description = this.text(t.description);
    this.tools.set(t, out);
    return out;
  }

  /** Strings and keys of a JSON value (schemas are bounded in depth by the proxy before they get here). */
  private json(v: unknown): unknown {
    if (typeof v === "string") return this.text(v);
    if (Array.isArray(v)) return v.map((x) => this.json(x));
    if (v !== null && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[this.text(k)] = this.json(x);
      return out;
    }
    return v;
  }
}

/** Wraps a codec's renderer so that only its template emits the tokenizer's special tokens. */
export function guardRenderer(renderer: ChatRenderer, tokenizer: Tokenizer): ChatRenderer {
  return renderer instanceof SpecialTextGuard ? renderer : new SpecialTextGuard(renderer, tokenizer.specialTokens.keys());
}
