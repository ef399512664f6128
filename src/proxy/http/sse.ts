import type { ServerResponse } from "node:http";

/**
 * Server-sent events over one HTTP response. Headers go out with the first event, so errors that happen before any
 * output (auth, validation, an engine that fails at once) can still be answered with a proper status code.
 *
 * Events written in the same tick are coalesced into one socket write (flushed in a microtask): a real engine's
 * tokens arrive in separate ticks and still go out one by one as they are sampled, while bursts (the closing events,
 * an engine that returns many tokens at once) cost one system call instead of one per event.
 */
export class SseWriter {
  private opened = false;
  private closed = false;
  private pending: string[] = [];
  private scheduled = false;
  private readonly flushNow = (): void => this.flush();

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
    const rest = this.take();
    if (this.res.destroyed) return;
    if (rest === "") this.res.end();
    else this.res.end(rest);
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
  }

  private write(chunk: string): void {
    if (this.closed || this.res.destroyed) return;
    this.open();
    this.pending.push(chunk);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(this.flushNow);
    }
  }

  private take(): string {
    this.scheduled = false;
    if (this.pending.length === 0) return "";
    const text = this.pending.length === 1 ? (this.pending[0] as string) : this.pending.join("");
    this.pending = [];
    return text;
  }

  private flush(): void {
    const text = this.take();
    if (text !== "" && !this.closed && !this.res.destroyed) this.res.write(text);
  }
}
