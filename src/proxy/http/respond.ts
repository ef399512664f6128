import type { ServerResponse } from "node:http";
import { HarnessError } from "../../core/errors.js";

/** Sends a complete JSON response (the non-streaming path and every error before a stream starts). */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** A URL path segment, decoded; malformed escapes are the caller's error, not ours. */
export function pathSegment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new HarnessError("invalid_request", `malformed URL path segment "${raw}"`);
  }
}
