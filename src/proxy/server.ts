import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
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
  /** Extra model names to answer to (`*` = any). */
  modelAliases?: readonly string[];
  /** Largest accepted request body (default 64 MiB). */
  maxBodyBytes?: number;
  /** Unexpected failures (engine crashes, bugs); default: logged to stderr. */
  onError?: (error: unknown) => void;
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
      models: new ModelCatalog(options.engine.model.id, options.modelAliases ?? []),
      sampling: { ...DEFAULT_SAMPLING, ...options.sampling },
      maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
      onError,
      onRecord: options.onRecord ?? null,
    };
    this.server = createServer({ keepAliveTimeout: 75_000, requestTimeout: 0 }, (req, res) => {
      void this.route(req, res);
    });
    // Clients that drop mid-stream produce socket errors; they are expected, not fatal.
    this.server.on("clientError", (_err, socket) => socket.destroy());
  }

  async listen(port = 0, host = "127.0.0.1"): Promise<ProxyUrls> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
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
      this.fail(protocol, res, e);
    }
  }

  /** The error boundary for everything that happens before a response has started. */
  private fail(protocol: Protocol, res: ServerResponse, e: unknown): void {
    if (!isHarnessRLError(e) || e.fault === "infra" || e.fault === "engine") this.ctx.onError(e);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const { status, body } = toProtocolError(protocol, e);
    sendJson(res, status, body, status === 413 ? { connection: "close" } : {});
  }
}
