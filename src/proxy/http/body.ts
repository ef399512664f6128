import type { IncomingMessage } from "node:http";
import { HarnessError, UserError } from "../../core/errors.js";

/**
 * Reads a request body up to `limit` bytes and parses it as JSON. Oversized bodies are refused as soon as they cross
 * the limit (declared via Content-Length or not), so a hostile client cannot make the proxy buffer unbounded data.
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  return (await readJsonBodyText(req, limit)).value;
}

/** Like `readJsonBody`, with the body's text (the record keeps the request as sent instead of serialising it again). */
export function readJsonBodyText(req: IncomingMessage, limit: number): Promise<{ value: unknown; text: string }> {
  const declared = Number(req.headers["content-length"] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(tooLarge(declared, limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        failed = true;
        req.off("data", onData);
        req.resume();
        reject(tooLarge(size, limit));
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("error", (e) => {
      failed = true;
      reject(new HarnessError("request_aborted", `reading the request body failed: ${e.message}`));
    });
    req.once("end", () => {
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
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new HarnessError("invalid_json", `request body is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function tooLarge(size: number, limit: number): UserError {
  return new UserError("payload_too_large", `request body is ${size} bytes or more; the limit is ${limit} bytes (see --max-body-mb)`);
}
