import { createReadStream, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { Readable } from "node:stream";
import { z } from "zod";
import { defaultCodec, loadCodec, type Codec } from "../../chat/codec.js";
import { EngineError, UserError, errorOfCode, isErrorCode } from "../../core/errors.js";
import { readModelConfig } from "../../weights/config.js";
import { policyDigest } from "../../weights/digest.js";
import { modelWeightFiles } from "../../weights/safetensors.js";
import type { FinishReason, GenerateRequest } from "../types.js";
import { stringOptions, type EngineSpec } from "../spec.js";
import { DEFAULT_RETRY, postJson, postSse, type RetryPolicy } from "../remote/http.js";
import type { RemoteOptions } from "../remote/options.js";
import { RemoteEngine, type Emit, type RemoteCompletion } from "../remote/remote-engine.js";
import { CODEC_FILES, PROTOCOL_VERSION, codecSchema, errorAnswerSchema, generateAnswerSchema, infoSchema, policyAnswerSchema, streamEventSchema, type ServiceInfo } from "./protocol.js";

/**
 * `llamacpp-http:<url>`: the client of `harnessrl serve` (server.ts). Rollout nodes sample from a shared llama.cpp
 * engine over HTTP; each result carries the policy version and the engine instance the server says sampled it. The
 * codec comes from `?model_dir=`, else the run's policy codec, else the server's `/v1/codec` (so a node needs no copy of
 * the model). `loadPolicy` pushes the version's model directory to the server (`?weights=push`, the default: works
 * across machines) or names it as a path the server reads (`?weights=path`: a shared disk); it returns once the server
 * serves the new version. Bearer tokens come from the environment (HARNESSRL_SERVE_TOKEN for generation,
 * HARNESSRL_SERVE_ADMIN_TOKEN for loads; `?token_env=` / `?admin_token_env=` name other variables), never from the
 * spec, which is recorded.
 */
const querySchema = z
  .object({
    model_dir: z.string().min(1).optional(),
    timeout_ms: z.coerce.number().int().min(1).optional(),
    retries: z.coerce.number().int().min(0).max(20).optional(),
    backoff_ms: z.coerce.number().int().min(0).optional(),
    weights: z.enum(["push", "path"]).optional(),
    token_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).optional(),
    admin_token_env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).optional(),
    sync: z.enum(["0", "1"]).optional(),
  })
  .strict();

export interface ServedOptions {
  baseUrl: string;
  modelDir: string | undefined;
  retry: RetryPolicy;
  weights: "push" | "path";
  token: string | undefined;
  adminToken: string | undefined;
  /**
   * `?sync=1` (a trainer's engine, set by run configs): at connect, make the server serve the model directory's policy
   * version (config.json `harnessrl.policy_version`) when it serves another, so a resumed run samples its own weights.
   */
  sync: boolean;
}

export function servedOptions(spec: EngineSpec): ServedOptions {
  const base = spec.target.replace(/\/+$/, "");
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new UserError("invalid_engine_spec", "llamacpp-http needs the server's URL: llamacpp-http:http://host:port[?weights=push|path&model_dir=…]");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UserError("invalid_engine_spec", `llamacpp-http: URL must be http(s), got ${base}`);
  if (url.username || url.password) throw new UserError("invalid_engine_spec", "llamacpp-http: no credentials in the URL (it is recorded); set HARNESSRL_SERVE_TOKEN instead");
  const r = querySchema.safeParse(stringOptions(spec));
  if (!r.success) throw new UserError("invalid_engine_spec", `llamacpp-http spec "${base}": ${z.prettifyError(r.error)}`);
  const o = r.data;
  const env = (name: string): string | undefined => {
    const v = process.env[name];
    return v === undefined || v === "" ? undefined : v;
  };
  return {
    baseUrl: base,
    modelDir: o.model_dir ?? spec.modelDir,
    retry: { timeoutMs: o.timeout_ms ?? DEFAULT_RETRY.timeoutMs, retries: o.retries ?? DEFAULT_RETRY.retries, backoffMs: o.backoff_ms ?? DEFAULT_RETRY.backoffMs },
    weights: o.weights ?? "push",
    token: env(o.token_env ?? "HARNESSRL_SERVE_TOKEN"),
    adminToken: env(o.admin_token_env ?? "HARNESSRL_SERVE_ADMIN_TOKEN"),
    sync: o.sync === "1",
  };
}

/** The server's structured refusal rebuilt as the harnessrl error it was (a bad prompt stays a user error). */
function serverError(e: unknown): unknown {
  if (!(e instanceof EngineError)) return e;
  const body = e.details?.body;
  if (typeof body !== "string") return e;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return e;
  }
  const r = errorAnswerSchema.safeParse(parsed);
  if (!r.success || !isErrorCode(r.data.error.code)) return e;
  return errorOfCode(r.data.error.code, `harnessrl serve: ${r.data.error.message}`, { retryable: r.data.error.retryable, cause: e });
}

async function getJson<T>(url: string, schema: z.ZodType<T>, headers: Record<string, string>, timeoutMs: number): Promise<T> {
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    throw new EngineError("engine_unreachable", `cannot reach ${url}: ${e instanceof Error ? e.message : String(e)}`, { retryable: true, cause: e });
  }
  const text = await res.text();
  if (!res.ok) throw serverError(new EngineError(res.status >= 500 ? "engine_server_error" : "engine_rejected", `${url} answered ${res.status}: ${text.slice(0, 300)}`, { details: { status: res.status, body: text.slice(0, 4000) } }));
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new EngineError("invalid_engine_response", `${url} answered non-JSON: ${text.slice(0, 200)}`, { cause: e });
  }
  const r = schema.safeParse(raw);
  if (!r.success) throw new EngineError("invalid_engine_response", `${url}: unexpected answer: ${z.prettifyError(r.error)}`);
  return r.data;
}

/** The server's codec files, written to a temporary directory and loaded the one way model directories are. */
async function fetchCodec(o: ServedOptions): Promise<Codec> {
  const { files } = await getJson(`${o.baseUrl}/v1/codec`, codecSchema, authHeader(o.token), o.retry.timeoutMs);
  const dir = mkdtempSync(join(tmpdir(), "harnessrl-served-codec-"));
  try {
    for (const [name, text] of Object.entries(files)) if ((CODEC_FILES as readonly string[]).includes(name)) writeFileSync(join(dir, name), text);
    return existsSync(join(dir, "tokenizer.json")) || existsSync(join(dir, "tokenizer_config.json")) ? loadCodec(dir) : defaultCodec();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function authHeader(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

export class ServedEngine extends RemoteEngine {
  private constructor(
    spec: string,
    remote: RemoteOptions,
    private readonly served: ServedOptions,
    info: ServiceInfo,
  ) {
    super(spec, remote);
    this.instance = info.engine_instance;
  }

  /** Asks the server who it is (model, context window, version, instance) and takes its codec. */
  static async connect(spec: string, o: ServedOptions, codec: Codec | undefined): Promise<ServedEngine> {
    const info = await getJson(`${o.baseUrl}/v1/info`, infoSchema, {}, o.retry.timeoutMs);
    if (info.protocol !== PROTOCOL_VERSION) throw new EngineError("invalid_engine_response", `${o.baseUrl} speaks harnessrl serve protocol ${info.protocol}, this client ${PROTOCOL_VERSION}`);
    const own = o.modelDir === undefined ? (codec ?? (await fetchCodec(o))) : undefined;
    const remote: RemoteOptions = {
      baseUrl: o.baseUrl,
      modelDir: o.modelDir,
      model: info.model,
      retry: o.retry,
      contextWindow: info.context_window,
      initialVersion: info.policy_version,
      reloadUrl: undefined,
      lora: false,
      ...(own ? { codec: own } : {}),
    };
    const engine = new ServedEngine(spec, remote, o, info);
    if (engine.tokenizer.vocabSize > info.vocab_size) {
      throw new UserError("incompatible_policy", `the codec's vocabulary (${engine.tokenizer.vocabSize}) is larger than the served model's (${info.vocab_size}) at ${o.baseUrl}`);
    }
    if (o.sync) {
      if (o.modelDir === undefined) throw new UserError("invalid_engine_spec", "llamacpp-http: ?sync=1 needs the policy's model directory (model_dir)");
      const want = readModelConfig(o.modelDir).policyVersion ?? 0;
      // The version number alone does not identify a policy: a service started on another model also says v0.
      const other = info.policy_version !== want || (info.policy_digest !== undefined && info.policy_digest !== policyDigest(o.modelDir));
      if (other) await engine.loadPolicy(o.modelDir, want);
    }
    return engine;
  }

  protected async complete(req: GenerateRequest, signal: AbortSignal, emit: Emit): Promise<RemoteCompletion | undefined> {
    const url = `${this.served.baseUrl}/v1/generate`;
    const p = req.params;
    const stream = req.onToken !== undefined;
    const body = {
      prompt: req.promptTokens,
      params: { temperature: p.temperature, max_tokens: p.maxTokens, top_p: p.topP, top_k: p.topK, min_p: p.minP, ...(p.seed !== undefined ? { seed: p.seed } : {}) },
      stream,
    };
    const headers = authHeader(this.served.token);
    try {
      if (!stream) {
        const raw = await postJson(url, body, this.served.retry, signal, headers);
        if (raw === undefined) return undefined;
        const r = generateAnswerSchema.safeParse(raw);
        if (!r.success) throw new EngineError("invalid_engine_response", `${url}: unexpected answer: ${z.prettifyError(r.error)}`);
        emit(r.data.tokens, r.data.logprobs);
        return this.stamped(r.data.finish_reason, r.data);
      }
      let end: RemoteCompletion | undefined;
      let more = true;
      const done = await postSse(
        url,
        body,
        this.served.retry,
        signal,
        (event) => {
          const r = streamEventSchema.safeParse(event);
          if (!r.success) throw new EngineError("invalid_engine_response", `${url}: unexpected event: ${z.prettifyError(r.error)}`);
          const e = r.data;
          if ("token" in e) {
            if (more) more = emit([e.token], [e.logprob]);
          } else if ("done" in e) end = this.stamped(e.finish_reason, e);
          else throw serverError(new EngineError("engine_server_error", e.error.message, { details: { body: JSON.stringify(e) } }));
        },
        headers,
      );
      if (done === undefined) return undefined;
      if (!end) throw new EngineError("engine_stream_broken", `${url}: stream ended without its closing event`);
      return end;
    } catch (e) {
      throw serverError(e);
    }
  }

  /** Keeps the client's view of the server's version current (another client may have loaded a newer one). */
  private stamped(finishReason: FinishReason, s: { policy_version: number; engine_instance: string; current_version: number }): RemoteCompletion {
    this.version = s.current_version;
    this.instance = s.engine_instance;
    return { finishReason, serverVersion: s.policy_version, serverInstance: s.engine_instance };
  }

  protected async reloadWeights(modelDir: string, version: number): Promise<void> {
    const o = this.served;
    const headers = authHeader(o.adminToken);
    const once = { ...o.retry, retries: 0 };
    try {
      if (o.weights === "push") await this.push(modelDir, version, headers);
      const body = o.weights === "push" ? { version, uploaded: true } : { version, model_dir: resolve(modelDir) };
      const raw = await postJson(`${o.baseUrl}/v1/policy`, body, once, undefined, headers);
      const r = policyAnswerSchema.safeParse(raw);
      if (!r.success) throw new EngineError("invalid_engine_response", `${o.baseUrl}/v1/policy: unexpected answer: ${z.prettifyError(r.error)}`);
      if (r.data.policy_version !== version) throw new EngineError("weight_update_failed", `${o.baseUrl} serves version ${r.data.policy_version} after loading ${version}`);
      this.instance = r.data.engine_instance;
    } catch (e) {
      throw serverError(e);
    }
  }

  /** Uploads the files the server needs to serve `modelDir` (config, tokenizer, template, weights), one PUT each. */
  private async push(modelDir: string, version: number, headers: Record<string, string>): Promise<void> {
    const files = CODEC_FILES.map((n) => join(modelDir, n)).filter((f) => existsSync(f));
    const index = join(modelDir, "model.safetensors.index.json");
    if (existsSync(index)) files.push(index);
    files.push(...modelWeightFiles(modelDir));
    for (const file of files) {
      const url = `${this.served.baseUrl}/v1/policy/uploads/${version}/${encodeURIComponent(basename(file))}`;
      let res: Response;
      try {
        res = await fetch(url, {
          method: "PUT",
          headers: { ...headers, "content-type": "application/octet-stream", "content-length": String(statSync(file).size) },
          body: Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>,
          duplex: "half",
          signal: AbortSignal.timeout(this.served.retry.timeoutMs),
        } as RequestInit);
      } catch (e) {
        throw new EngineError("engine_unreachable", `uploading ${file} to ${url} failed: ${e instanceof Error ? e.message : String(e)}`, { retryable: true, cause: e });
      }
      const text = await res.text();
      if (!res.ok) throw serverError(new EngineError(res.status >= 500 ? "engine_server_error" : "engine_rejected", `${url} answered ${res.status}: ${text.slice(0, 300)}`, { details: { status: res.status, body: text.slice(0, 4000) } }));
    }
  }
}
