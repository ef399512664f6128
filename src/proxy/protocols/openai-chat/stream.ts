import type { SseWriter } from "../../http/sse.js";
import type { ProtocolStream, Reply } from "../protocol.js";
import { usageOf } from "./response.js";

/**
 * Chat Completions chunks as the openai SDK's ChatCompletionStream accumulates them: a role chunk, content /
 * reasoning_content deltas, one tool_calls delta per call (id, type, name, full arguments), a finish_reason chunk,
 * the usage chunk (`choices: []`) when `stream_options.include_usage` is set, then `[DONE]`.
 */
export class ChatStream implements ProtocolStream {
  private roleSent = false;

  constructor(
    private readonly reply: Reply,
    private readonly includeUsage: boolean,
    private readonly sse: SseWriter,
  ) {}

  private chunk(delta: Record<string, unknown>, finishReason: string | null = null): void {
    if (!this.roleSent) {
      delta = { role: "assistant", ...delta };
      this.roleSent = true;
    }
    const chunk: Record<string, unknown> = {
      id: this.reply.id,
      object: "chat.completion.chunk",
      created: this.reply.created,
      model: this.reply.model,
      choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
    };
    if (this.includeUsage) chunk.usage = null;
    this.sse.send(null, chunk);
  }

  reasoning(text: string): void {
    this.chunk({ reasoning_content: text });
  }

  content(delta: string): void {
    this.chunk({ content: delta });
  }

  finishBody(reply: Reply): void {
    reply.toolCalls.forEach((c, index) => {
      this.chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }] });
    });
    if (!this.roleSent) this.chunk({ content: "" });
  }

  end(reply: Reply): void {
    this.chunk({}, reply.stopReason);
    if (this.includeUsage) {
      this.sse.send(null, { id: reply.id, object: "chat.completion.chunk", created: reply.created, model: reply.model, choices: [], usage: usageOf(reply) });
    }
    this.sse.sendRaw("[DONE]");
    this.sse.end();
  }

  fail(error: { status: number; body: Record<string, unknown> }): void {
    // The openai SDK turns a data event carrying `error` into an APIError.
    this.sse.send(null, error.body);
    this.sse.end();
  }
}
