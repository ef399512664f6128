import type { SseWriter } from "../../http/sse.js";
import type { ProtocolStream, Reply } from "../protocol.js";
import { STOP_REASON, thinkingSignature, usageOf } from "./response.js";

/**
 * Anthropic Messages events as @anthropic-ai/sdk's MessageStream accumulates them: message_start, then per content
 * block content_block_start / *_delta / content_block_stop (thinking, text, tool_use with one input_json_delta),
 * message_delta (stop_reason + usage), message_stop.
 */
export class AnthropicStream implements ProtocolStream {
  private index = 0;
  private textOpen = false;
  private anyBlock = false;

  constructor(
    reply: Reply,
    private readonly sse: SseWriter,
  ) {
    this.sse.send("message_start", {
      type: "message_start",
      message: {
        id: reply.id,
        type: "message",
        role: "assistant",
        model: reply.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: reply.usage.inputTokens, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
    });
  }

  private start(block: Record<string, unknown>): void {
    this.anyBlock = true;
    this.sse.send("content_block_start", { type: "content_block_start", index: this.index, content_block: block });
  }

  private delta(delta: Record<string, unknown>): void {
    this.sse.send("content_block_delta", { type: "content_block_delta", index: this.index, delta });
  }

  private stop(): void {
    this.sse.send("content_block_stop", { type: "content_block_stop", index: this.index });
    this.index++;
  }

  reasoning(text: string): void {
    this.closeText();
    this.start({ type: "thinking", thinking: "", signature: "" });
    this.delta({ type: "thinking_delta", thinking: text });
    this.delta({ type: "signature_delta", signature: thinkingSignature() });
    this.stop();
  }

  content(delta: string): void {
    if (!this.textOpen) {
      this.start({ type: "text", text: "" });
      this.textOpen = true;
    }
    this.delta({ type: "text_delta", text: delta });
  }

  private closeText(): void {
    if (!this.textOpen) return;
    this.textOpen = false;
    this.stop();
  }

  finishBody(reply: Reply): void {
    if (!this.anyBlock && reply.toolCalls.length === 0) this.content("");
    this.closeText();
    for (const c of reply.toolCalls) {
      this.start({ type: "tool_use", id: c.id, name: c.name, input: {} });
      this.delta({ type: "input_json_delta", partial_json: JSON.stringify(c.input) });
      this.stop();
    }
  }

  end(reply: Reply): void {
    this.sse.send("message_delta", {
      type: "message_delta",
      delta: { stop_reason: STOP_REASON[reply.stopReason], stop_sequence: null },
      usage: usageOf(reply),
    });
    this.sse.send("message_stop", { type: "message_stop" });
    this.sse.end();
  }

  fail(error: { status: number; body: Record<string, unknown> }): void {
    this.sse.send("error", error.body);
    this.sse.end();
  }
}
