import { z } from "zod";
import { EngineError, UserError } from "../../core/errors.js";
import type { FinishReason, GenerateRequest } from "../types.js";
import { AdapterSlots } from "./adapters.js";
import { postJson, postSse, postText } from "./http.js";
import type { RemoteOptions } from "./options.js";
import { RemoteEngine, type Emit, type RemoteCompletion } from "./remote-engine.js";

/**
 * `vllm:<url>`: vLLM's OpenAI-compatible `POST /v1/completions` with the prompt given as token ids. Sampled ids come
 * from `choices[0].token_ids` (`return_token_ids`, vLLM ≥ 0.10.2) or, on older servers, from the logprob tokens
 * rendered as "token_id:N" (`return_tokens_as_token_ids`). Start vLLM with `--logprobs-mode processed_logprobs` so
 * the logprobs are those of the distribution actually sampled (temperature applied), not the raw model's.
 * vLLM has no standard weight-reload endpoint: `loadPolicy` calls the deployment hook given as `?reload_url=`; with
 * `?lora=1` it loads the version's LoRA adapter instead (`POST /v1/load_lora_adapter`; the server needs
 * `--enable-lora` and `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`) and requests name it as their `model`.
 * Requests with an `onToken` callback are streamed (server-sent events; each chunk carries its new token ids and
 * logprobs), so tokens reach the proxy as they are sampled.
 */
const choiceSchema = z.object({
  token_ids: z.array(z.number()).nullish(),
  logprobs: z.object({ token_logprobs: z.array(z.number().nullable()), tokens: z.array(z.string()) }).nullish(),
  finish_reason: z.string().nullish(),
});
const responseSchema = z.object({ choices: z.array(choiceSchema) });
type Choice = z.infer<typeof choiceSchema>;

const TOKEN_ID = /^token_id:(\d+)$/;

export class VllmEngine extends RemoteEngine {
  private readonly adapters = new AdapterSlots();

  constructor(spec: string, options: RemoteOptions) {
    super(spec, options);
  }

  protected async complete(req: GenerateRequest, signal: AbortSignal, emit: Emit): Promise<RemoteCompletion | undefined> {
    const url = `${this.options.baseUrl}/v1/completions`;
    const p = req.params;
    const stream = req.onToken !== undefined;
    const body: Record<string, unknown> = {
      prompt: req.promptTokens,
      max_tokens: p.maxTokens,
      temperature: p.temperature,
      top_p: p.topP,
      top_k: p.topK > 0 ? p.topK : -1,
      min_p: p.minP,
      logprobs: 1,
      stop_token_ids: this.tokenizer.stopTokenIds,
      skip_special_tokens: false,
      spaces_between_special_tokens: false,
      return_token_ids: true,
      return_tokens_as_token_ids: true,
      stream,
    };
    const model = this.adapters.current ?? this.options.model;
    if (model) body.model = model;
    if (p.seed !== undefined) body.seed = p.seed;
    // OpenAI's logit_bias (token id → bias); vLLM adds it before sampling and before its processed logprobs.
    if (this.textlessBias) body.logit_bias = this.textlessBias;
    let finish: string | null | undefined;
    const last: number[] = [];
    const take = (raw: unknown): boolean => {
      const r = responseSchema.safeParse(raw);
      if (!r.success) throw new EngineError("invalid_engine_response", `${url}: unexpected response shape: ${z.prettifyError(r.error)}`);
      const choice = r.data.choices[0];
      // Stream chunks without choices (e.g. a final usage chunk) carry no tokens.
      if (!choice) {
        if (stream) return true;
        throw new EngineError("invalid_engine_response", `${url}: response has no choices`);
      }
      if (!stream && !choice.logprobs) throw new EngineError("invalid_engine_response", `${url}: response has no logprobs`);
      finish = choice.finish_reason ?? finish;
      const { ids, logprobs } = readTokens(url, choice);
      if (ids.length) last.splice(0, last.length, ids[ids.length - 1] as number);
      return emit(ids, logprobs);
    };
    if (stream) {
      let more = true;
      const done = await postSse(url, body, this.options.retry, signal, (event) => {
        if (more) more = take(event);
      });
      if (done === undefined) return undefined;
    } else {
      const raw = await postJson(url, body, this.options.retry, signal);
      if (raw === undefined) return undefined;
      take(raw);
    }
    return { finishReason: mapFinish(finish, last, this.tokenizer.stopTokenIds) };
  }

  protected async reloadWeights(modelDir: string, version: number): Promise<void> {
    if (this.options.lora) {
      const base = this.options.baseUrl;
      const once = { ...this.options.retry, retries: 0 };
      // Both endpoints answer plain text on success; errors are HTTP statuses (raised by postText).
      return this.adapters.swap(modelDir, version, {
        load: async (name, path) => void (await postText(`${base}/v1/load_lora_adapter`, { lora_name: name, lora_path: path }, once)),
        unload: async (name) => void (await postText(`${base}/v1/unload_lora_adapter`, { lora_name: name }, once)),
      });
    }
    if (!this.options.reloadUrl) {
      throw new UserError("unsupported_weight_reload", "vLLM has no standard weight-reload API: configure a deployment hook with ?reload_url=<url> (it receives POST {model_path, version})");
    }
    await postJson(this.options.reloadUrl, { model_path: modelDir, version }, { ...this.options.retry, retries: 0 });
  }
}

/** A choice's (or stream chunk's) sampled ids and logprobs. */
function readTokens(url: string, choice: Choice): { ids: unknown[]; logprobs: unknown[] } {
  const lp = choice.logprobs;
  if (!lp) {
    if (choice.token_ids && choice.token_ids.length > 0) throw new EngineError("invalid_engine_response", `${url}: response has token ids but no logprobs`);
    return { ids: [], logprobs: [] };
  }
  if (choice.token_ids) return { ids: choice.token_ids, logprobs: lp.token_logprobs };
  const ids = lp.tokens.map((t) => {
    const m = TOKEN_ID.exec(t);
    if (!m) throw new EngineError("invalid_engine_response", `${url}: response has neither token_ids nor "token_id:N" tokens (got ${JSON.stringify(t)})`);
    return Number(m[1]);
  });
  return { ids, logprobs: lp.token_logprobs };
}

function mapFinish(reason: string | null | undefined, tokens: readonly number[], stops: readonly number[]): FinishReason {
  if (reason === "length") return "length";
  if (reason === "abort") return "abort";
  if (reason === "stop") return "stop";
  // Unknown or missing: infer from the last token.
  const last = tokens.at(-1);
  return last !== undefined && stops.includes(last) ? "stop" : "length";
}
