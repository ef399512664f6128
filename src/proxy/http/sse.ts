import type { ServerResponse } from "node:http";

/**
 * Server-sent events over one HTTP response. Headers go out with the first event, so errors that happen before any
 * output (auth, validation, an engine that fails at once) can still be answered with a proper status code.
 */
export class SseWriter {
  private opened = false;
  private closed = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly headers: Record<string, string> = {},
  ) {}

  get started(): boolean {
    return this.opened;
  }

  /** Writes one event; `event` null writes a data-only event (OpenAI Chat Completions style). */
  send(event: string | null, data: unknown): void {
    this.write(event === null ? `data: ${JSON.stringify(data)}\n\n` : `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Writes a raw data line, e.g. OpenAI's `[DONE]` sentinel. */
  sendRaw(data: string): void {
    this.write(`data: ${data}\n\n`);
  }

  end(): void {
    if (this.closed) return;
    this.open();
    this.closed = true;
    this.res.end();
  }

  private open(): void {
    if (this.opened) return;
    this.opened = true;
    this.res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-accel-buffering": "no",
      ...this.headers,
    });
    // Headers go out now so the client sees the stream open even before the first token.
    this.res.flushHeaders();
  }

  private write(chunk: string): void {
    if (this.closed || this.res.destroyed) return;
    this.open();
    this.res.write(chunk);
  }
}
