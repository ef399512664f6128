import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

/** Hosts the server may bind without a token: only this machine can reach them. */
export function isLoopback(host: string): boolean {
  return host === "127.0.0.1" || host === "::1" || host === "localhost" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The cookie a page load with `?token=` sets, so the page's own API and event-stream requests carry the token. */
export const TOKEN_COOKIE = "harnessrl_dashboard";

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The token a request presents: `Authorization: Bearer`, the cookie, or `?token=` (links and the first page load). */
export function presentedToken(req: IncomingMessage, url: URL): string | null {
  const auth = req.headers.authorization;
  if (auth?.startsWith("Bearer ")) return auth.slice(7).trim();
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === TOKEN_COOKIE) return decodeURIComponent(v.join("="));
  }
  return url.searchParams.get("token");
}

export function tokenMatches(expected: string, req: IncomingMessage, url: URL): boolean {
  const given = presentedToken(req, url);
  return given !== null && same(given, expected);
}

/**
 * On loopback, a page of another site can still reach the server through a DNS name rebound to 127.0.0.1; its
 * requests then carry that name as Host. Only loopback names (any port) are accepted.
 */
export function loopbackHostHeader(req: IncomingMessage): boolean {
  const host = req.headers.host;
  if (host === undefined) return false;
  const name = host.startsWith("[") ? host.slice(1, host.indexOf("]")) : (host.split(":")[0] ?? "");
  return isLoopback(name);
}
