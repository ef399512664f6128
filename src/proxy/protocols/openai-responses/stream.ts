import type { SseWriter } from "../../http/sse.js";
import type { ProtocolStream, Reply } from "../protocol.js";
import type { ResponsesRequest } from "./request.js";
import { callItem, customInput, itemIds, messageItem, outputTextPart, reasoningItem, responseObject } from "./response.js";

/**
 * Responses events as the openai SDK's ResponseStream accumulates them, each with a `sequence_number`:
 * response.created, response.in_progress, then per output item output_item.added → (content_part.added →
 * *.delta → *.done → content_part.done) → output_item.done, and finally response.completed (or .incomplete).
 */
export class ResponsesStream implements ProtocolStream {
  private seq = 0;
  private outputIndex = 0;
  private messageIndex = -1;
  private text = "";

  constructor(
    private readonly req: ResponsesRequest,
    private readonly reply: Reply,
    private readonly sse: SseWriter,
  ) {
    const response = responseObject(req, reply, false);
    this.emit("response.created", { response });
    this.emit("response.in_progress", { response });
  }

  private emit(type: string, fields: Record<string, unknown>): void {
    this.sse.send(type, { type, sequence_number: this.seq++, ...fields });
  }

  reasoning(text: string): void {
    this.closeMessage();
    const item = reasoningItem(this.req, { ...this.reply, reasoning: text });
    const item_id = item.id;
    const output_index = this.outputIndex++;
    const at = { item_id, output_index, content_index: 0 };
    this.emit("response.output_item.added", { output_index, item: { type: "reasoning", id: item_id, summary: [] } });
    this.emit("response.content_part.added", { ...at, part: { type: "reasoning_text", text: "" } });
    this.emit("response.reasoning_text.delta", { ...at, delta: text });
    this.emit("response.reasoning_text.done", { ...at, text });
    this.emit("response.content_part.done", { ...at, part: { type: "reasoning_text", text } });
    this.emit("response.output_item.done", { output_index, item });
  }

  content(delta: string): void {
    const item_id = itemIds(this.reply).message;
    if (this.messageIndex < 0) {
      this.messageIndex = this.outputIndex++;
      this.emit("response.output_item.added", { output_index: this.messageIndex, item: messageItem(this.reply, "in_progress") });
      this.emit("response.content_part.added", { item_id, output_index: this.messageIndex, content_index: 0, part: outputTextPart("") });
    }
    this.text += delta;
    if (delta !== "") this.emit("response.output_text.delta", { item_id, output_index: this.messageIndex, content_index: 0, delta, logprobs: [] });
  }

  private closeMessage(): void {
    if (this.messageIndex < 0) return;
    const item_id = itemIds(this.reply).message;
    const at = { item_id, output_index: this.messageIndex, content_index: 0 };
    this.emit("response.output_text.done", { ...at, text: this.text, logprobs: [] });
    this.emit("response.content_part.done", { ...at, part: outputTextPart(this.text) });
    this.emit("response.output_item.done", { output_index: this.messageIndex, item: messageItem({ ...this.reply, content: this.text }, "completed") });
    this.messageIndex = -2;
  }

  finishBody(reply: Reply): void {
    if (this.messageIndex === -1 && reply.toolCalls.length === 0) this.content("");
    this.closeMessage();
    reply.toolCalls.forEach((call, i) => {
      const output_index = this.outputIndex++;
      const item = callItem(this.req, reply, i, false);
      const item_id = item.id;
      this.emit("response.output_item.added", { output_index, item });
      if (item.type === "custom_tool_call") {
        const input = customInput(call);
        this.emit("response.custom_tool_call_input.delta", { item_id, output_index, delta: input });
        this.emit("response.custom_tool_call_input.done", { item_id, output_index, input });
      } else {
        this.emit("response.function_call_arguments.delta", { item_id, output_index, delta: call.arguments });
        this.emit("response.function_call_arguments.done", { item_id, output_index, name: call.name, arguments: call.arguments });
      }
      this.emit("response.output_item.done", { output_index, item: callItem(this.req, reply, i, true) });
    });
  }

  end(reply: Reply): void {
    const response = responseObject(this.req, reply, true);
    this.emit(response.status === "incomplete" ? "response.incomplete" : "response.completed", { response });
    this.sse.end();
  }

  fail(error: { status: number; body: Record<string, unknown> }): void {
    const e = (error.body.error ?? {}) as Record<string, unknown>;
    const response = { ...responseObject(this.req, this.reply, false), status: "failed", error: { code: e.code ?? "server_error", message: e.message ?? "" } };
    this.emit("response.failed", { response });
    this.sse.end();
  }
}
