import { z } from "zod";
import { EngineError, UserError } from "../../core/errors.js";
import type { FinishReason, GenerateRequest } from "../types.js";
import { postJson } from "./http.js";
import type { RemoteOptions } from "./options.js";
import { RemoteEngine, type RemoteCompletion } from "./remote-engine.js";

/**
 * `vllm:<url>`: vLLM's OpenAI-compatible `POST /v1/completions` with the prompt given as token ids. Sampled ids come
 * from `choices[0].token_ids` (`return_token_ids`, vLLM ≥ 0.10.2) or, on older servers, from the logprob tokens
 * rendered as "token_id:N" (`return_tokens_as_token_ids`). Start vLLM with `--logprobs-mode processed_logprobs` so
 * the logprobs are those of the distribution actually sampled (temperature applied), not the raw model's.
 * vLLM has no standard weight-reload endpoint: `loadPolicy` calls the deployment hook given as `?reload_url=`.
 */
const responseSchema = z.object({
  choices: z
    .array(
      z.object({
        token_ids: z.array(z.number()).nullish(),
        logprobs: z.object({ token_logprobs: z.array(z.number().nullable()), tokens: z.array(z.string()) }).nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
});

const TOKEN_ID = /^token_id:(\d+)$/;

export class VllmEngine extends RemoteEngine {
  constructor(spec: string, options: RemoteOptions) {
    super(spec, options);
  }

  protected async complete(req: GenerateRequest, signal: AbortSignal): Promise<RemoteCompletion | undefined> {
    const url = `${this.options.baseUrl}/v1/completions`;
    const p = req.params;
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
      stream: false,
    };
    if (this.options.model) body.model = this.options.model;
    if (p.seed !== undefined) body.seed = p.seed;
    const raw = await postJson(url, body, this.options.retry, signal);
    if (raw === undefined) return undefined;
    const r = responseSchema.safeParse(raw);
    if (!r.success) throw new EngineError("engine_bad_response", `${url}: unexpected response shape: ${z.prettifyError(r.error)}`);
    const choice = r.data.choices[0];
    if (!choice?.logprobs) throw new EngineError("engine_bad_response", `${url}: response has no logprobs`);
    const lps = choice.logprobs.token_logprobs;
    let ids: unknown[];
    if (choice.token_ids) ids = choice.token_ids;
    else {
      ids = choice.logprobs.tokens.map((t) => {
        const m = TOKEN_ID.exec(t);
        if (!m) throw new EngineError("engine_bad_response", `${url}: response has neither token_ids nor "token_id:N" tokens (got ${JSON.stringify(t)})`);
        return Number(m[1]);
      });
    }
    const checked = this.checkTokens(url, ids, lps);
    return { ...checked, finishReason: mapFinish(choice.finish_reason, checked.tokens, this.tokenizer.stopTokenIds) };
  }

  protected async reloadWeights(modelDir: string, version: number): Promise<void> {
    if (!this.options.reloadUrl) {
      throw new UserError("reload_unsupported", "vLLM has no standard weight-reload API: configure a deployment hook with ?reload_url=<url> (it receives POST {model_path, version})");
    }
    await postJson(this.options.reloadUrl, { model_path: modelDir, version }, { ...this.options.retry, retries: 0 });
  }
}

function mapFinish(reason: string | null | undefined, tokens: readonly number[], stops: readonly number[]): FinishReason {
  if (reason === "length") return "length";
  if (reason === "abort") return "abort";
  if (reason === "stop") return "stop";
  // Unknown or missing: infer from the last token.
  const last = tokens.at(-1);
  return last !== undefined && stops.includes(last) ? "stop" : "length";
}
