import { existsSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "zod";
import { mulberry32 } from "../../src/core/random.js";

/**
 * Local stand-ins for a vLLM and an SGLang server (no GPU server runs here). They reproduce the documented request
 * and response shapes of vLLM's `/v1/completions` (token-id prompts, `logprobs`, `return_token_ids` /
 * `return_tokens_as_token_ids`) and SGLang's `/generate` (`input_ids`, `sampling_params`, `return_logprob`,
 * `meta_info.output_token_logprobs`) and `/update_weights_from_disk`, and both servers' runtime LoRA adapter endpoints
 * (vLLM `/v1/load_lora_adapter` answering plain text, SGLang `/load_lora_adapter` answering JSON). A tiny seeded pseudo-model stands in for the
 * weights: its next-token distribution depends on the last token and the weight version, and sampled tokens report
 * their true log-probability under the tempered distribution.
 */
export interface FakeServerOptions {
  vocabSize: number;
  stopIds: readonly number[];
  /** vLLM < 0.10.2: no `token_ids` in the response, only "token_id:N" logprob tokens. */
  legacyVllm?: boolean;
  /** Delay before answering each generation (ms). */
  delayMs?: number;
}

export interface FakeServer {
  url: string;
  /** Failures to inject into the next generation requests, in order. */
  failures: ({ status: number; retryAfter?: number } | "drop")[];
  requests: { path: string; body: Record<string, unknown> }[];
  reloads: { model_path: string; version?: unknown }[];
  /** LoRA adapters currently loaded, by name → path. */
  adapters: Map<string, string>;
  weightVersion: number;
  close(): Promise<void>;
}

const rng = mulberry32;

/** Inverse-CDF draw: the first id whose cumulative (unnormalised) mass reaches u. */
function draw(scaled: readonly number[], max: number, u: number): number {
  let rest = u;
  for (let id = 0; id < scaled.length; id++) {
    rest -= Math.exp((scaled[id] ?? 0) - max);
    if (rest <= 0) return id;
  }
  return scaled.length - 1;
}

/** The pseudo-model: samples up to maxTokens, stopping on a stop id. */
function sample(o: FakeServerOptions, version: number, prompt: readonly number[], maxTokens: number, temperature: number, seed: number | undefined) {
  const rand = rng(seed ?? Math.floor(Math.random() * 2 ** 32));
  const tokens: number[] = [];
  const logprobs: number[] = [];
  let last = prompt.at(-1) ?? 0;
  let finish: "stop" | "length" = "length";
  while (tokens.length < maxTokens) {
    const logits = Array.from({ length: o.vocabSize }, (_, j) => 3 * Math.sin(j * 12.9898 + last * 78.233 + version * 3.7));
    const t = temperature > 0 ? temperature : 1;
    const scaled = logits.map((l) => l / t);
    const m = Math.max(...scaled);
    const z = scaled.reduce((s, l) => s + Math.exp(l - m), 0);
    const id = temperature === 0 ? scaled.indexOf(m) : draw(scaled, m, rand() * z);
    tokens.push(id);
    logprobs.push((scaled[id] ?? 0) - m - Math.log(z));
    last = id;
    if (o.stopIds.includes(id)) {
      finish = "stop";
      break;
    }
  }
  return { tokens, logprobs, finish };
}

const vllmBody = z.object({
  prompt: z.array(z.number().int().nonnegative()).min(1),
  max_tokens: z.number().int().nonnegative(),
  temperature: z.number().min(0),
  top_p: z.number(),
  top_k: z.number().int(),
  min_p: z.number(),
  seed: z.number().int().optional(),
  logprobs: z.number().int().min(0).optional(),
  stop_token_ids: z.array(z.number().int()).optional(),
  return_token_ids: z.boolean().optional(),
  return_tokens_as_token_ids: z.boolean().optional(),
  stream: z.boolean().optional(),
  model: z.string().optional(),
}).loose();

const sglangBody = z.object({
  input_ids: z.array(z.number().int().nonnegative()).min(1),
  sampling_params: z.object({
    max_new_tokens: z.number().int().nonnegative(),
    temperature: z.number().min(0),
    top_p: z.number(),
    top_k: z.number().int(),
    min_p: z.number(),
    sampling_seed: z.number().int().optional(),
    stop_token_ids: z.array(z.number().int()).optional(),
  }).loose(),
  return_logprob: z.boolean().optional(),
}).loose();

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as unknown;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

export async function startFakeServer(kind: "vllm" | "sglang", o: FakeServerOptions): Promise<FakeServer> {
  const state: Omit<FakeServer, "url" | "close"> = { failures: [], requests: [], reloads: [], adapters: new Map(), weightVersion: 0 };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = req.url ?? "/";
      const body = (await readBody(req)) as Record<string, unknown>;
      state.requests.push({ path, body });
      const generation = path === "/v1/completions" || path === "/generate";
      if (generation) {
        const f = state.failures.shift();
        if (f === "drop") {
          req.socket.destroy();
          return;
        }
        if (f) return send(res, f.status, { object: "error", message: "injected failure", code: f.status }, f.retryAfter !== undefined ? { "retry-after": String(f.retryAfter) } : {});
        if (o.delayMs) await new Promise((r) => setTimeout(r, o.delayMs));
      }
      if (kind === "vllm" && path === "/v1/completions") {
        const b = vllmBody.safeParse(body);
        if (!b.success) return send(res, 400, { object: "error", message: z.prettifyError(b.error), type: "BadRequestError", code: 400 });
        const r = sample(o, state.weightVersion, b.data.prompt, b.data.max_tokens, b.data.temperature, b.data.seed);
        const asIds = b.data.return_tokens_as_token_ids === true;
        const logprobs = b.data.logprobs === undefined ? null : { text_offset: r.tokens.map((_, i) => i), token_logprobs: r.logprobs, tokens: r.tokens.map((t) => (asIds ? `token_id:${t}` : String.fromCharCode(t))), top_logprobs: r.tokens.map((t, i) => ({ [asIds ? `token_id:${t}` : String.fromCharCode(t)]: r.logprobs[i] })) };
        if (body.stream === true) {
          res.writeHead(200, { "content-type": "text/event-stream" });
          r.tokens.forEach((t, i) => {
            const tok = asIds ? `token_id:${t}` : String.fromCharCode(t);
            const chunk: Record<string, unknown> = { index: 0, text: String.fromCharCode(t), logprobs: { text_offset: [i], token_logprobs: [r.logprobs[i]], tokens: [tok], top_logprobs: [{ [tok]: r.logprobs[i] }] }, finish_reason: i === r.tokens.length - 1 ? r.finish : null };
            if (!o.legacyVllm && b.data.return_token_ids) chunk.token_ids = [t];
            res.write(`data: ${JSON.stringify({ id: "cmpl-fake", object: "text_completion", created: 0, model: "fake", choices: [chunk] })}\n\n`);
          });
          res.write("data: [DONE]\n\n");
          res.end();
          return;
        }
        const choice: Record<string, unknown> = { index: 0, text: r.tokens.map((t) => String.fromCharCode(t)).join(""), logprobs, finish_reason: r.finish, stop_reason: r.finish === "stop" ? r.tokens.at(-1) : null, prompt_logprobs: null };
        if (!o.legacyVllm) {
          choice.token_ids = b.data.return_token_ids ? r.tokens : null;
          choice.prompt_token_ids = b.data.return_token_ids ? b.data.prompt : null;
        }
        return send(res, 200, { id: "cmpl-fake", object: "text_completion", created: 0, model: b.data.model ?? "fake", choices: [choice], usage: { prompt_tokens: b.data.prompt.length, completion_tokens: r.tokens.length, total_tokens: b.data.prompt.length + r.tokens.length } });
      }
      if (kind === "vllm" && path === "/reload") {
        state.reloads.push(body as { model_path: string; version?: unknown });
        state.weightVersion = Number(body.version);
        return send(res, 200, { ok: true });
      }
      if (kind === "sglang" && path === "/generate") {
        const b = sglangBody.safeParse(body);
        if (!b.success) return send(res, 400, { error: { message: z.prettifyError(b.error) } });
        const s = b.data.sampling_params;
        const r = sample(o, state.weightVersion, b.data.input_ids, s.max_new_tokens, s.temperature, s.sampling_seed);
        const finish = r.finish === "stop" ? { type: "stop", matched: r.tokens.at(-1) } : { type: "length", length: s.max_new_tokens };
        const meta: Record<string, unknown> = { id: "fake", finish_reason: finish, prompt_tokens: b.data.input_ids.length, completion_tokens: r.tokens.length, cached_tokens: 0, weight_version: String(state.weightVersion) };
        if (b.data.return_logprob) meta.output_token_logprobs = r.tokens.map((t, i) => [r.logprobs[i], t, null]);
        return send(res, 200, { text: r.tokens.map((t) => String.fromCharCode(t)).join(""), output_ids: r.tokens, meta_info: meta });
      }
      if (kind === "sglang" && path === "/update_weights_from_disk") {
        const mp = typeof body.model_path === "string" ? body.model_path : "";
        if (!existsSync(mp)) return send(res, 400, { success: false, message: `Failed to update weights: ${mp} not found` });
        state.reloads.push({ model_path: mp, version: body.weight_version });
        state.weightVersion = Number(body.weight_version ?? state.weightVersion + 1);
        return send(res, 200, { success: true, message: "Succeeded to update model weights.", num_paused_requests: 0 });
      }
      const adapterPath = path === "/v1/load_lora_adapter" || path === "/load_lora_adapter";
      if (adapterPath || path === "/v1/unload_lora_adapter" || path === "/unload_lora_adapter") {
        if ((kind === "vllm") !== path.startsWith("/v1/")) return send(res, 404, { detail: "Not Found" });
        const name = String(body.lora_name ?? "");
        const ok = adapterPath ? typeof body.lora_path === "string" && existsSync(`${body.lora_path}/adapter_config.json`) && !state.adapters.has(name) : state.adapters.has(name);
        if (ok && adapterPath) state.adapters.set(name, String(body.lora_path));
        if (ok && !adapterPath) state.adapters.delete(name);
        if (kind === "sglang") return send(res, 200, { success: ok, error_message: ok ? "" : `adapter ${name} failed`, loaded_adapters: Object.fromEntries(state.adapters) });
        if (!ok) return send(res, 400, { object: "error", message: `adapter ${name} failed`, type: "BadRequestError", code: 400 });
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(`Success: LoRA adapter '${name}' ${adapterPath ? "added" : "removed"} successfully.`);
        return;
      }
      send(res, 404, { detail: "Not Found" });
    })().catch((e: unknown) => send(res, 500, { message: String(e) }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  const fake: FakeServer = Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
  return fake;
}
