import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { UserError, errorMessage } from "../core/errors.js";
import { reportCsp } from "../report/html.js";
import { TOKEN_COOKIE, isLoopback, loopbackHostHeader, tokenMatches } from "./access.js";
import { answer } from "./api.js";
import { asset } from "./assets.js";
import { RunCatalog } from "./catalog.js";
import type { ClusterSource } from "./cluster.js";
import { LiveHub } from "./live.js";

export interface DashboardOptions {
  /** Directory of runs (or one run directory). */
  runs: string;
  host?: string;
  /** 0: any free port. */
  port?: number;
  /** Required unless `host` is a loopback address; every request must then present it. */
  token?: string;
  /** Rollout nodes' state and the rollout queue, when a cluster exists (without one the cluster page stays hidden). */
  cluster?: ClusterSource;
}

export interface Dashboard {
  url: string;
  host: string;
  port: number;
  close(): Promise<void>;
  /** For tests: the live hub's clients and one poll. */
  readonly live: LiveHub;
}

const SECURITY_HEADERS = {
  // Everything the pages use comes from this server; inline scripts, frames and other origins are refused.
  "content-security-policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": type, "cache-control": "no-store", ...SECURITY_HEADERS, ...extra });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  send(res, status, "application/json; charset=utf-8", JSON.stringify(body));
}

/** Path segments, decoded; null when one is malformed or could climb (`..`, separators, NUL). */
function segments(pathname: string): string[] | null {
  const out: string[] = [];
  for (const raw of pathname.split("/").slice(1)) {
    let s: string;
    try {
      s = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (s === ".." || s === "." || s.includes("/") || s.includes("\\") || s.includes("\0")) return null;
    out.push(s);
  }
  return out;
}

/**
 * Starts the dashboard's HTTP server. It binds 127.0.0.1 unless told otherwise; any other address needs a token,
 * which every request must then present. It serves a fixed table of client assets, JSON read from the run
 * directories' known files, and each run's report.html; no request names a file.
 */
export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const host = options.host ?? "127.0.0.1";
  const token = options.token && options.token.length > 0 ? options.token : null;
  if (!isLoopback(host) && token === null) throw new UserError("dashboard_token_required", `the dashboard listens on ${host}, reachable from other machines: give --token (every request must then present it)`);
  if (token !== null && token.length < 16) throw new UserError("invalid_dashboard_token", "the dashboard token must have at least 16 characters");
  let catalog: RunCatalog;
  try {
    catalog = new RunCatalog(options.runs);
  } catch (e) {
    throw new UserError("run_dir_not_found", `cannot read the runs directory ${options.runs}: ${errorMessage(e)}`, { cause: e });
  }
  const live = new LiveHub(catalog);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // Dot segments are refused as sent, before URL parsing would resolve them into some other (harmless) path.
    if (/(^|\/|%2f)(\.|%2e){1,2}(\/|%2f|\?|$)/i.test(req.url ?? "/")) return sendJson(res, 400, { error: "bad path" });
    const url = new URL(req.url ?? "/", "http://dashboard.invalid");
    if (isLoopback(host) && !loopbackHostHeader(req)) return sendJson(res, 403, { error: "unexpected Host header" });
    if (token !== null && !tokenMatches(token, req, url)) return sendJson(res, 401, { error: "this dashboard needs its token (?token=… once, or Authorization: Bearer …)" });
    if (req.method !== "GET" && req.method !== "HEAD") return sendJson(res, 405, { error: "read-only" });
    const parts = segments(url.pathname);
    if (parts === null) return sendJson(res, 400, { error: "bad path" });
    if (parts[0] === "api") {
      if (parts[1] === "events" && parts.length === 2) {
        const run = url.searchParams.get("run");
        if (!live.subscribe(res, run && catalog.get(run) ? run : null)) sendJson(res, 503, { error: "too many live clients" });
        return;
      }
      if (parts[1] === "config" && parts.length === 2) return sendJson(res, 200, { cluster: options.cluster !== undefined });
      if (parts[1] === "cluster" && parts.length === 2) {
        if (!options.cluster) return sendJson(res, 404, { error: "no cluster source (rollout nodes) configured" });
        try {
          return sendJson(res, 200, await options.cluster.snapshot());
        } catch (e) {
          // Redis down or restarting: the page says so and polls again.
          return sendJson(res, 503, { error: errorMessage(e) });
        }
      }
      const a = answer(catalog, parts.slice(1), url.searchParams);
      return sendJson(res, a.status, a.body);
    }
    if (parts[0] === "report" && parts.length === 2) {
      const run = catalog.get(parts[1] ?? "");
      const path = run?.reportPath() ?? null;
      if (path === null) return sendJson(res, 404, { error: "no report" });
      // The report's own policy: its two inline scripts (uPlot, the chart code) allowed by hash, nothing fetched.
      return send(res, 200, "text/html; charset=utf-8", readFileSync(path), { "content-security-policy": reportCsp() });
    }
    const a = asset(url.pathname);
    if (!a) return sendJson(res, 404, { error: "not found" });
    // A page opened with ?token= keeps it in a cookie for its API and event-stream requests (EventSource sends no headers).
    const cookie: Record<string, string> = token !== null && url.pathname === "/" ? { "set-cookie": `${TOKEN_COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/` } : {};
    send(res, 200, a.type, req.method === "HEAD" ? "" : a.body, cookie);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: errorMessage(e) });
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (e) => reject(new UserError("listen_failed", `cannot listen on ${host}:${options.port ?? 7860}: ${errorMessage(e)}`, { cause: e })));
    server.listen(options.port ?? 7860, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/`,
    host,
    port,
    live,
    close: async () => {
      live.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      catalog.close();
    },
  };
}
