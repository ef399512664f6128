/**
 * Splits completion text, as it is sampled, into what can be streamed to the harness at once: reasoning (one piece,
 * when `</think>` closes it, never empty) and visible content (token by token). It mirrors `parseAssistantOutput`'s view of the
 * text: content is trimmed (leading whitespace dropped, trailing whitespace held until more text follows), markers
 * (`<tool_call>`, `<think>`, end-of-turn tokens) are never emitted half-way, and from the first `<tool_call>` on
 * nothing more is streamed: tool calls are emitted whole once the completion is parsed.
 */
export interface SplitterEvents {
  reasoning(text: string): void;
  content(delta: string): void;
}

const TOOL_OPEN = "<tool_call>";
const THINK_OPEN = "<think>";
const THINK_CLOSE = "</think>";

type Mode = "start" | "reasoning" | "content" | "tools";

export class OutputSplitter {
  private mode: Mode;
  /** Text received but not yet classified. */
  private pending = "";
  private reasoningText = "";
  /** Content already emitted. */
  private streamed = "";
  private reasoningOut: string | null = null;
  private readonly markers: string[];

  constructor(
    private readonly events: SplitterEvents,
    options: { startsInReasoning?: boolean; endOfTurnTexts?: readonly string[] } = {},
  ) {
    this.mode = options.startsInReasoning ? "reasoning" : "start";
    this.markers = [TOOL_OPEN, THINK_OPEN, THINK_CLOSE, ...(options.endOfTurnTexts ?? ["<|im_end|>", "<|endoftext|>"])];
  }

  /** Content the harness has been sent so far. */
  get streamedContent(): string {
    return this.streamed;
  }

  /** The reasoning the harness has been sent, if any. */
  get streamedReasoning(): string | null {
    return this.reasoningOut;
  }

  push(text: string): void {
    if (text === "" || this.mode === "tools") return;
    this.pending += text;
    this.advance();
  }

  private advance(): void {
    for (;;) {
      if (this.mode === "start") {
        const t = this.pending.replace(/^\s+/, "");
        if (t === "") return;
        if (t.startsWith(THINK_OPEN)) {
          this.pending = t.slice(THINK_OPEN.length);
          this.mode = "reasoning";
          continue;
        }
        if (THINK_OPEN.startsWith(t)) return; // could still become <think>
        this.pending = t;
        this.mode = "content";
        continue;
      }
      if (this.mode === "reasoning") {
        const close = this.pending.indexOf(THINK_CLOSE);
        if (close < 0) return;
        this.reasoningText += this.pending.slice(0, close);
        this.pending = this.pending.slice(close + THINK_CLOSE.length).replace(/^\s+/, "");
        this.reasoningOut = this.reasoningText.trim();
        // An empty block (Qwen3 with thinking off, or a model that skips it) is no reasoning: the parse drops it too,
        // and a reasoning item the final response does not list would shift every item after it.
        if (this.reasoningOut !== "") this.events.reasoning(this.reasoningOut);
        this.mode = "content";
        continue;
      }
      if (this.mode === "content") {
        this.emitContent();
        return;
      }
      return;
    }
  }

  private emitContent(): void {
    const call = this.pending.indexOf(TOOL_OPEN);
    let safe = call >= 0 ? this.pending.slice(0, call) : this.pending;
    let held = "";
    if (call < 0) {
      // Hold back a tail that could be the start of a marker.
      const lt = safe.lastIndexOf("<");
      if (lt >= 0 && this.markers.some((m) => m.startsWith(safe.slice(lt)))) {
        held = safe.slice(lt);
        safe = safe.slice(0, lt);
      }
    }
    // Trailing whitespace goes out only once more content follows (parsers trim content).
    const trimmed = safe.replace(/\s+$/, "");
    const ws = safe.slice(trimmed.length);
    if (this.streamed === "") {
      const lead = trimmed.replace(/^\s+/, "");
      if (lead !== "") this.emit(lead);
    } else if (trimmed !== "") this.emit(trimmed);
    if (call >= 0) {
      this.mode = "tools";
      this.pending = "";
      return;
    }
    this.pending = ws + held;
  }

  private emit(delta: string): void {
    this.streamed += delta;
    this.events.content(delta);
  }
}
