import type { IncomingMessage } from "node:http";
import { HarnessError, InfraError, UserError } from "../../core/errors.js";
import { MAX_JSON_DEPTH, jsonNestingDepth } from "../../core/json-depth.js";

/**
 * The body bytes all requests being read hold together. Each request's limit bounds one body; this bounds many slow
 * ones at once (eight stalled 60 MiB bodies would otherwise hold ~0.5 GiB). Over budget, a request is refused with a
 * retryable 503 and its bytes are released.
 */
export class BodyBudget {
  private held = 0;

  constructor(readonly limit: number) {}

  get bytes(): number {
    return this.held;
  }

  take(n: number): boolean {
    if (this.held + n > this.limit) return false;
    this.held += n;
    return true;
  }

  release(n: number): void {
    this.held = Math.max(0, this.held - n);
  }
}

/**
 * Reads a request body up to `limit` bytes and parses it as JSON. Oversized bodies are refused as soon as they cross
 * the limit (declared via Content-Length or not), so a hostile client cannot make the proxy buffer unbounded data.
 */
export async function readJsonBody(req: IncomingMessage, limit: number, budget?: BodyBudget): Promise<unknown> {
  return (await readJsonBodyText(req, limit, budget)).value;
}

/** Like `readJsonBody`, with the body's text (the record keeps the request as sent instead of serialising it again). */
export function readJsonBodyText(req: IncomingMessage, limit: number, budget?: BodyBudget): Promise<{ value: unknown; text: string }> {
  const declared = Number(req.headers["content-length"] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(tooLarge(declared, limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    let held = 0;
    const settle = (): void => {
      budget?.release(held);
      held = 0;
    };
    const stop = (e: Error): void => {
      failed = true;
      settle();
      chunks.length = 0;
      req.off("data", onData);
      req.resume();
      reject(e);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) return stop(tooLarge(size, limit));
      if (budget) {
        if (!budget.take(chunk.length)) return stop(new InfraError("proxy_busy", `the proxy is reading ${budget.bytes} body bytes for other requests (limit ${budget.limit}); retry shortly`, { retryable: true }));
        held += chunk.length;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("error", (e) => {
      if (failed) return;
      stop(new HarnessError("request_aborted", `reading the request body failed: ${e.message}`));
    });
    // A connection closed or timed out mid-body never ends: give its bytes back.
    req.once("close", () => {
      if (!req.complete && !failed) stop(new HarnessError("request_aborted", "the client closed the connection before the request body was complete"));
    });
    req.once("end", () => {
      settle();
      if (failed) return;
      const text = chunks.length === 1 ? (chunks[0] as Buffer).toString("utf8") : Buffer.concat(chunks, size).toString("utf8");
      try {
        resolve({ value: parseJson(text), text });
      } catch (e) {
        reject(e);
      }
    });
  });
}

function parseJson(text: string): unknown {
  if (text.trim() === "") throw new HarnessError("invalid_json", "request body is empty; expected a JSON object");
  // Before parsing: everything downstream of the parse (validation, templates, value keys) recurses.
  if (jsonNestingDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw new HarnessError("json_too_deep", `request body nests arrays/objects more than ${MAX_JSON_DEPTH} levels deep`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new HarnessError("invalid_json", `request body is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function tooLarge(size: number, limit: number): UserError {
  return new UserError("payload_too_large", `request body is ${size} bytes or more; the limit is ${limit} bytes (see --max-body-mb)`);
}
