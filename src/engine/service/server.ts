import { createHash, timingSafeEqual } from "node:crypto";
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { z } from "zod";
import { EngineError, InfraError, UserError, isHarnessRLError, toHarnessRLError, type HarnessRLError } from "../../core/errors.js";
import { MAX_JSON_DEPTH, jsonNestingDepth } from "../../core/json-depth.js";
import type { GenerateResult, HotSwappableEngine } from "../types.js";
import { CODEC_FILES, FILE_NAME, PROTOCOL_VERSION, generateBodySchema, policyBodySchema, type GenerateBody, type ServiceInfo } from "./protocol.js";
import { policyDigest } from "../../weights/digest.js";

/** An engine the service can own: hot-swappable, with an id of its own (LlamaCppEngine). */
export type ServableEngine = HotSwappableEngine & { readonly instanceId: string };

export interface EngineServiceOptions {
  engine: ServableEngine;
  /** The model directory the engine was started on: its tokenizer and chat template files are served at /v1/codec. */
  modelDir: string;
  /** Bearer token for /v1/generate and /v1/codec; without one they are open (refused beyond loopback by the CLI). */
  token?: string;
  /** Bearer token for loading policy versions; without one, loads are refused. */
  adminToken?: string;
  /** Where uploaded policy versions are written (`v<N>/` each, removed once loaded). */
  uploadDir: string;
  /** Largest JSON body (default 32 MiB: a 1M-token prompt). */
  maxBodyBytes?: number;
  /** Largest uploaded file (default 64 GiB). */
  maxUploadBytes?: number;
  /** Called after each policy load (logging). */
  onPolicy?: (version: number, ms: number) => void;
  /** Unexpected failures (engine crashes, bugs); default: stderr. */
  onError?: (e: unknown) => void;
}

/** Same digest length whatever was presented, so comparing takes the same time for every wrong token. */
function sameToken(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

function bearer(req: IncomingMessage): string | null {
  const auth = req.headers.authorization;
  return auth?.startsWith("Bearer ") ? auth.slice(7).trim() : null;
}

function statusOf(e: HarnessRLError): number {
  if (e.fault === "user") {
    if (e.code === "unauthorized") return 401;
    if (e.code === "not_found") return 404;
    if (e.code === "method_not_allowed") return 405;
    if (e.code === "payload_too_large") return 413;
    return 400;
  }
  return e.retryable ? 503 : 500;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function errorBody(e: HarnessRLError): { error: { code: string; message: string; fault: string; retryable: boolean } } {
  return { error: { code: e.code, message: e.message, fault: e.fault, retryable: e.retryable } };
}

/**
 * `harnessrl serve`: one llama.cpp engine over HTTP, token-in/token-out, so several rollout nodes share it, and the
 * trainer pushes each new policy version to it (wire format: protocol.ts). Every body is validated (zod) before it
 * touches the engine; every refusal is `{error: {code, message, fault, retryable}}` with a matching HTTP status.
 */
export class EngineService {
  private server: Server | undefined;
  private inFlight = 0;
  private readonly codecFiles: Record<string, string> = {};
  private readonly maxBody: number;
  private readonly maxUpload: number;
  /** The digest of the weights served now (weights/digest.ts): with the version, what the policy is. */
  private digest: string;

  constructor(private readonly options: EngineServiceOptions) {
    this.maxBody = options.maxBodyBytes ?? 32 * 1024 * 1024;
    this.maxUpload = options.maxUploadBytes ?? 64 * 1024 ** 3;
    for (const name of CODEC_FILES) {
      const file = join(options.modelDir, name);
      if (existsSync(file)) this.codecFiles[name] = readFileSync(file, "utf8");
    }
    mkdirSync(options.uploadDir, { recursive: true });
    this.digest = policyDigest(options.modelDir);
  }

  get info(): ServiceInfo {
    const e = this.options.engine;
    return {
      service: "harnessrl-serve",
      protocol: PROTOCOL_VERSION,
      model: e.model.id,
      context_window: e.model.contextWindow,
      vocab_size: e.tokenizer.vocabSize,
      policy_version: e.policyVersion,
      policy_digest: this.digest,
      engine_instance: e.instanceId,
      in_flight: this.inFlight,
      auth: this.options.token !== undefined,
    };
  }

  async listen(port: number, host: string): Promise<string> {
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", (e) => reject(new UserError("listen_failed", `harnessrl serve cannot listen on ${host}:${port}: ${e.message}`, { cause: e })));
      server.listen(port, host, () => resolve());
    });
    const a = server.address() as AddressInfo;
    const h = a.family === "IPv6" ? `[${a.address}]` : a.address;
    return `http://${h}:${a.port}`;
  }

  /** Stops listening and drops open connections (requests in flight are aborted); the engine stays open. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const path = new URL(req.url ?? "/", "http://service").pathname;
      const method = req.method ?? "GET";
      const upload = /^\/v1\/policy\/uploads\/([^/]+)\/([^/]+)$/.exec(path);
      if (path === "/v1/info" || path === "/health") {
        this.allow(method, "GET");
        return sendJson(res, 200, this.info);
      }
      if (path === "/v1/codec") {
        this.allow(method, "GET");
        this.authorize(req, "generate");
        return sendJson(res, 200, { files: this.codecFiles });
      }
      if (path === "/v1/generate") {
        this.allow(method, "POST");
        this.authorize(req, "generate");
        const body = generateBodySchema.safeParse(await this.readJson(req));
        if (!body.success) throw new UserError("invalid_engine_request", `POST /v1/generate: ${z.prettifyError(body.error)}`);
        return await this.generate(body.data, req, res);
      }
      if (path === "/v1/policy") {
        this.allow(method, "POST");
        this.authorize(req, "admin");
        const body = policyBodySchema.safeParse(await this.readJson(req));
        if (!body.success) throw new UserError("invalid_engine_request", `POST /v1/policy: ${z.prettifyError(body.error)} (expected {version, model_dir} or {version, uploaded: true})`);
        const version = body.data.version;
        const dir = "model_dir" in body.data ? body.data.model_dir : this.uploadedDir(version);
        if (!existsSync(dir)) throw new UserError("model_dir_not_found", `policy directory ${dir} does not exist on the server (push the weights instead of naming a path?)`);
        const t0 = performance.now();
        const digest = policyDigest(dir);
        await this.options.engine.loadPolicy(dir, version);
        this.digest = digest;
        const ms = performance.now() - t0;
        // The engine has exported its own GGUF copy: the upload is no longer needed.
        if (!("model_dir" in body.data)) rmSync(dir, { recursive: true, force: true });
        this.options.onPolicy?.(version, ms);
        return sendJson(res, 200, { policy_version: this.options.engine.policyVersion, engine_instance: this.options.engine.instanceId, load_ms: Math.round(ms) });
      }
      if (upload) {
        this.allow(method, "PUT");
        this.authorize(req, "admin");
        const [, v, name] = upload as unknown as [string, string, string];
        if (!/^\d{1,15}$/.test(v)) throw new UserError("invalid_engine_request", `upload path: version must be a non-negative integer, got "${v}"`);
        if (!FILE_NAME.test(name)) throw new UserError("invalid_engine_request", `upload path: file name "${name}" must match ${String(FILE_NAME)}`);
        const bytes = await this.receiveFile(req, join(this.options.uploadDir, `v${Number(v)}`), name);
        return sendJson(res, 200, { version: Number(v), file: name, bytes });
      }
      throw new UserError("not_found", `no route ${method} ${path}`);
    } catch (e) {
      const err = toHarnessRLError(e);
      if (err.fault !== "user") (this.options.onError ?? ((x: unknown) => console.error(x)))(e);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      // A body we refused before reading it: drain it so the client sees the answer instead of a reset.
      req.resume();
      sendJson(res, statusOf(err), errorBody(err));
    }
  }

  private allow(method: string, expected: string): void {
    if (method !== expected) throw new UserError("method_not_allowed", `${method} is not allowed here (use ${expected})`);
  }

  private authorize(req: IncomingMessage, role: "generate" | "admin"): void {
    const expected = role === "admin" ? this.options.adminToken : this.options.token;
    if (expected === undefined) {
      if (role === "admin") throw new UserError("unauthorized", "this server loads no policy versions: it was started without an admin token (--admin-token or HARNESSRL_SERVE_ADMIN_TOKEN)");
      return;
    }
    const given = bearer(req);
    if (given === null || !sameToken(given, expected)) throw new UserError("unauthorized", `missing or wrong bearer token for ${role === "admin" ? "policy loads (the admin token)" : "generation"}`);
  }

  /** The JSON body, bounded in bytes and nesting depth. */
  private async readJson(req: IncomingMessage): Promise<unknown> {
    const declared = Number(req.headers["content-length"] ?? NaN);
    if (Number.isFinite(declared) && declared > this.maxBody) throw new UserError("payload_too_large", `body of ${declared} bytes exceeds ${this.maxBody}`);
    const text = await new Promise<string>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const onData = (chunk: Buffer): void => {
        size += chunk.length;
        if (size <= this.maxBody) return void chunks.push(chunk);
        // Stop holding bytes but keep reading (discarding), so the refusal reaches the client instead of a reset.
        req.off("data", onData);
        req.resume();
        reject(new UserError("payload_too_large", `body exceeds ${this.maxBody} bytes`));
      };
      req.on("data", onData);
      req.once("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      req.once("error", (e) => reject(new UserError("invalid_engine_request", `reading the body failed: ${e.message}`)));
    });
    if (jsonNestingDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw new UserError("invalid_engine_request", `body nests deeper than ${MAX_JSON_DEPTH} levels`);
    try {
      return JSON.parse(text) as unknown;
    } catch (e) {
      throw new UserError("invalid_engine_request", `body is not JSON: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private async generate(body: GenerateBody, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const engine = this.options.engine;
    // The caller hanging up (a node aborting its request) stops the generation.
    const ac = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) ac.abort();
    };
    res.on("close", onClose);
    const p = body.params;
    const request = {
      promptTokens: body.prompt,
      params: { temperature: p.temperature, maxTokens: p.max_tokens, topP: p.top_p, topK: p.top_k, minP: p.min_p, ...(p.seed !== undefined ? { seed: p.seed } : {}) },
      signal: ac.signal,
    };
    this.inFlight++;
    try {
      if (!body.stream) {
        const r = await engine.generate(request);
        return sendJson(res, 200, { ...this.stamp(r), tokens: r.tokens, logprobs: r.logprobs, finish_reason: r.finishReason });
      }
      let opened = false;
      const open = (): void => {
        if (opened) return;
        opened = true;
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      };
      try {
        const r = await engine.generate({
          ...request,
          onToken: (token, logprob) => {
            open();
            res.write(`data: ${JSON.stringify({ token, logprob })}\n\n`);
          },
        });
        open();
        res.end(`data: ${JSON.stringify({ done: true, ...this.stamp(r), finish_reason: r.finishReason })}\n\ndata: [DONE]\n\n`);
      } catch (e) {
        // Before the first token the error gets its status; after it, an error event ends the stream.
        if (!opened) throw e;
        const err = toHarnessRLError(e);
        if (err.fault !== "user") (this.options.onError ?? ((x: unknown) => console.error(x)))(e);
        res.end(`data: ${JSON.stringify(errorBody(err))}\n\n`);
      }
    } finally {
      this.inFlight--;
      res.off("close", onClose);
    }
  }

  private stamp(r: GenerateResult): { policy_version: number; engine_instance: string; current_version: number } {
    const engine = this.options.engine;
    return { policy_version: r.policyVersion, engine_instance: r.engineInstance ?? engine.instanceId, current_version: engine.policyVersion };
  }

  private uploadedDir(version: number): string {
    const dir = join(this.options.uploadDir, `v${version}`);
    if (!existsSync(join(dir, "config.json"))) throw new UserError("invalid_engine_request", `no files were uploaded for policy version ${version} (PUT /v1/policy/uploads/${version}/<file> first; config.json is missing)`);
    return dir;
  }

  /** Streams the body to `<dir>/<name>` through a temporary name, bounded by maxUploadBytes. */
  private async receiveFile(req: IncomingMessage, dir: string, name: string): Promise<number> {
    const declared = Number(req.headers["content-length"] ?? NaN);
    if (Number.isFinite(declared) && declared > this.maxUpload) throw new UserError("payload_too_large", `upload of ${declared} bytes exceeds ${this.maxUpload}`);
    mkdirSync(dir, { recursive: true });
    const tmp = join(dir, `.${name}.part`);
    let size = 0;
    const limit = this.maxUpload;
    try {
      await pipeline(
        req,
        async function* (source: AsyncIterable<Buffer>) {
          for await (const chunk of source) {
            size += chunk.length;
            if (size > limit) throw new UserError("payload_too_large", `upload exceeds ${limit} bytes`);
            yield chunk;
          }
        },
        createWriteStream(tmp),
      );
    } catch (e) {
      rmSync(tmp, { force: true });
      if (isHarnessRLError(e)) throw e;
      if (req.destroyed || req.readableAborted) throw new UserError("invalid_engine_request", `upload of ${name} broke off after ${size} bytes`);
      throw new InfraError("internal", `cannot store upload ${name}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
    renameSync(tmp, join(dir, name));
    return size;
  }
}

/** Engines served here must name themselves; the llama.cpp engine does. */
export function asServable(engine: HotSwappableEngine): ServableEngine {
  const id = (engine as Partial<ServableEngine>).instanceId;
  if (typeof id !== "string" || id === "") throw new EngineError("llamacpp_unsupported", `engine ${engine.spec} has no instance id to serve under`);
  return engine as ServableEngine;
}
