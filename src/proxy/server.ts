import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { UserError, isHarnessRLError } from "../core/errors.js";
import { newSecret } from "../core/ids.js";
import { DEFAULT_SAMPLING, type SamplingEngine, type SamplingParams } from "../engine/types.js";
import type { HistoryPlanner } from "../history/types.js";
import type { CallRecord, Protocol } from "../icr/records.js";
import type { Store } from "../store/types.js";
import { handleAdmin, sessionStatus } from "./admin.js";
import { handleModelCall } from "./call.js";
import type { ProxyContext } from "./context.js";
import { countTokens } from "./count-tokens.js";
import { toProtocolError } from "./errors.js";
import { BodyBudget } from "./http/body.js";
import { pathSegment, sendJson } from "./http/respond.js";
import { ModelCatalog } from "./models.js";
import { MODEL_CALL_ROUTES } from "./protocols/index.js";
import { SessionRegistry, type IssueSessionRequest, type IssuedSession } from "./sessions.js";

export interface ProxyOptions {
  engine: SamplingEngine;
  store: Store;
  planner: HistoryPlanner;
  /** Accept any credential and use it as the session id (capturing an external harness by hand). Default false. */
  open?: boolean;
  /** Token for the admin API; generated when absent (read it from `server.adminToken`). */
  adminToken?: string;
  /** The run's sampling config; overrides what harnesses request. */
  sampling?: Partial<SamplingParams>;
  /** Model names listed by `/v1/models` next to the engine's id; with `strictModels`, the only names answered (`*` = any). */
  modelAliases?: readonly string[];
  /** Answer 404 to model names other than the engine's id and the aliases. Default false: any name is served. */
  strictModels?: boolean;
  /** Answer 400 to tool types the policy cannot serve (hosted tools) instead of leaving them out. Default false. */
  strictTools?: boolean;
  /** Largest accepted request body (default 64 MiB). */
  maxBodyBytes?: number;
  /** Body bytes all requests together may hold while being read (default 4 × maxBodyBytes); beyond it: 503, retry. */
  maxBufferedBodyBytes?: number;
  /** Time a client has to send its headers (default 30 s) and its whole request (default 120 s): 408 after. */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** Unexpected failures (engine crashes, bugs); default: logged to stderr. */
  onError?: (error: unknown) => void;
  /** Things an operator should know once (e.g. tools left out of prompts); default: one line on stderr. */
  onWarning?: (message: string) => void;
  /** Observes every call record once it is durable (live logs, progress); exceptions it throws are reported, not fatal. */
  onRecord?: (record: CallRecord) => void;
}

export interface ProxyUrls {
  /** Base URL for OpenAI clients (Chat Completions and Responses). */
  openai: string;
  /** Base URL for Anthropic clients (no `/v1`). */
  anthropic: string;
  admin: string;
}

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

/**
 * Failures Node's HTTP parser reports before there is a request: headers over the size limit (431), headers or body
 * not sent in time (408), malformed HTTP (400). Answered with a status line when the socket can still take one;
 * clients that simply went away (resets, mid-stream drops) are expected, not fatal.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  const status = err.code === "HPE_HEADER_OVERFLOW" ? 431 : err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400;
  const responding = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (err.code === "ECONNRESET" || !socket.writable || responding) {
    socket.destroy();
    return;
  }
  const reason = { 400: "Bad Request", 408: "Request Timeout", 431: "Request Header Fields Too Large" }[status];
  const body = JSON.stringify({ error: { message: `${status} ${reason}`, type: "invalid_request_error", param: null, code: status === 431 ? "headers_too_large" : status === 408 ? "request_timeout" : "bad_request" } });
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/** Why the proxy cannot listen, said in one line: the user chose the address. */
function listenError(e: NodeJS.ErrnoException, host: string, port: number): UserError {
  const why: Record<string, string> = {
    EADDRINUSE: `port ${port} on ${host} is already in use (pick another with --port, or 0 for any free one)`,
    EACCES: `not permitted to listen on ${host}:${port} (ports below 1024 need privileges)`,
    EADDRNOTAVAIL: `${host} is not an address of this machine`,
    ENOTFOUND: `unknown host "${host}"`,
    EAI_AGAIN: `cannot resolve host "${host}"`,
  };
  return new UserError("listen_failed", `the proxy cannot listen: ${why[e.code ?? ""] ?? e.message}`, { cause: e });
}

/** Resolves when the request body has been read to its end (or the connection closed), or after `ms`. */
function drained(req: IncomingMessage, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      req.off("end", done);
      req.off("close", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    req.on("end", done);
    req.on("close", done);
    req.resume();
  });
}

/** A guess at the caller's protocol for routes that are not model calls, to answer errors in a shape it can read. */
function protocolOf(req: IncomingMessage, path: string): Protocol {
  if (path.startsWith("/v1/messages") || req.headers["anthropic-version"] !== undefined) return "anthropic-messages";
  return path.startsWith("/v1/responses") ? "openai-responses" : "openai-chat";
}

/** Harnesses configured with a base URL without `/v1` post to `/chat/completions`; both spellings work. */
function normalisePath(url: string | undefined): string {
  const raw = url ?? "/";
  const q = raw.indexOf("?");
  let path = q < 0 ? raw : raw.slice(0, q);
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
  if (path === "/chat/completions" || path === "/responses" || path === "/messages" || path === "/messages/count_tokens" || path === "/models") path = `/v1${path}`;
  return path;
}

/**
 * The capture proxy: one HTTP port serving OpenAI Chat Completions, OpenAI Responses and Anthropic Messages to
 * harnesses, plus the admin API. Every answered model call leaves an Interface Call Record in the store.
 */
export class ProxyServer {
  readonly adminToken: string;
  private readonly ctx: ProxyContext;
  private readonly server: Server;
  private address: AddressInfo | null = null;

  constructor(options: ProxyOptions) {
    this.adminToken = options.adminToken ?? newSecret("hrladmin");
    const onError =
      options.onError ??
      ((e: unknown): void => {
        console.error(`harnessrl proxy: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      });
    this.ctx = {
      engine: options.engine,
      store: options.store,
      planner: options.planner,
      sessions: new SessionRegistry(options.store, options.open ?? false),
      models: new ModelCatalog(options.engine.model.id, options.modelAliases ?? [], options.strictModels ?? false),
      strictTools: options.strictTools ?? false,
      reportedOmissions: new Set<string>(),
      sampling: { ...DEFAULT_SAMPLING, ...options.sampling },
      maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      bodyBudget: new BodyBudget(options.maxBufferedBodyBytes ?? 4 * (options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES)),
      onError,
      onWarning: options.onWarning ?? ((m: string): void => console.error(`harnessrl proxy: ${m}`)),
      onRecord: options.onRecord ?? null,
    };
    // Slow or stalled clients cannot hold a connection (and its buffered body) for long: headers and the whole request
    // must arrive in time (the answer, e.g. a long stream, is not limited). Node checks these every few seconds.
    this.server = createServer(
      {
        keepAliveTimeout: 75_000,
        headersTimeout: options.headersTimeoutMs ?? 30_000,
        requestTimeout: options.requestTimeoutMs ?? 120_000,
        connectionsCheckingInterval: 2_000,
      },
      (req, res) => {
        void this.route(req, res);
      },
    );
    this.server.on("clientError", answerClientError);
  }

  async listen(port = 0, host = "127.0.0.1"): Promise<ProxyUrls> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", (e: NodeJS.ErrnoException) => reject(listenError(e, host, port)));
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        resolve();
      });
    });
    this.address = this.server.address() as AddressInfo;
    return this.urls;
  }

  get port(): number {
    if (!this.address) throw new UserError("not_listening", "the proxy is not listening yet");
    return this.address.port;
  }

  get urls(): ProxyUrls {
    const a = this.address;
    if (!a) throw new UserError("not_listening", "the proxy is not listening yet");
    const host = a.family === "IPv6" ? `[${a.address}]` : a.address === "0.0.0.0" ? "127.0.0.1" : a.address;
    const root = `http://${host}:${a.port}`;
    return { openai: `${root}/v1`, anthropic: root, admin: `${root}/admin` };
  }

  /** Issues a session credential for one rollout (or sub-agent); the library twin of `POST /admin/sessions`. */
  issueSession(request: IssueSessionRequest = {}): IssuedSession {
    return this.ctx.sessions.issue(request);
  }

  /** In-flight and recorded call counts of a session (`GET /admin/sessions/:id`). */
  sessionStatus(sessionId: string): { inFlight: number; records: number } {
    const s = sessionStatus(this.ctx, sessionId);
    return { inFlight: s.inFlight as number, records: s.records as number };
  }

  get inFlight(): number {
    return this.ctx.sessions.totalInFlight();
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = normalisePath(req.url);
    let protocol = protocolOf(req, path);
    try {
      const adapter = MODEL_CALL_ROUTES.get(path);
      if (adapter) {
        protocol = adapter.protocol;
        if (req.method !== "POST") throw new UserError("method_not_allowed", `use POST ${path}`);
        await handleModelCall(this.ctx, adapter, req, res);
      } else if (path === "/v1/messages/count_tokens") {
        if (req.method !== "POST") throw new UserError("method_not_allowed", `use POST ${path}`);
        await countTokens(this.ctx, req, res);
      } else if (path === "/v1/models") {
        this.ctx.sessions.authenticate(req.headers);
        sendJson(res, 200, this.ctx.models.list());
      } else if (path.startsWith("/v1/models/")) {
        this.ctx.sessions.authenticate(req.headers);
        const id = pathSegment(path.slice("/v1/models/".length));
        this.ctx.models.check(id);
        const found = (this.ctx.models.list().data as Record<string, unknown>[]).find((m) => m.id === id);
        sendJson(res, 200, found ?? { id, object: "model", type: "model", owned_by: "harnessrl", display_name: id, created: 0, created_at: new Date(0).toISOString() });
      } else if (path === "/health") {
        sendJson(res, 200, { ok: true, model: this.ctx.engine.model.id, inFlight: this.inFlight });
      } else if (path.startsWith("/admin/")) {
        await handleAdmin(this.ctx, this.adminToken, path, req, res);
      } else {
        throw new UserError("not_found", `no route ${req.method ?? ""} ${path}`);
      }
    } catch (e) {
      await this.fail(protocol, req, res, e);
    }
  }

  /** The error boundary for everything that happens before a response has started. */
  private async fail(protocol: Protocol, req: IncomingMessage, res: ServerResponse, e: unknown): Promise<void> {
    if ((!isHarnessRLError(e) || e.fault === "infra" || e.fault === "engine") && !(isHarnessRLError(e) && e.code === "proxy_busy")) this.ctx.onError(e);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const { status, body } = toProtocolError(protocol, e);
    // A refused body is still arriving: answering and closing now makes the client's write fail (EPIPE) before it
    // reads the status. Let the rest drain (discarded) for a few seconds first.
    if (status === 413 && !req.complete) await drained(req, 5_000);
    if (res.destroyed) return;
    sendJson(res, status, body, status === 413 ? { connection: "close" } : {});
  }
}
