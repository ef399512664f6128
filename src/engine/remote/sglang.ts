import { z } from "zod";
import { EngineError } from "../../core/errors.js";
import type { FinishReason, GenerateRequest } from "../types.js";
import { AdapterSlots } from "./adapters.js";
import { postJson } from "./http.js";
import type { RemoteOptions } from "./options.js";
import { RemoteEngine, type Emit, type RemoteCompletion } from "./remote-engine.js";

/**
 * `sglang:<url>`: SGLang's native `POST /generate` with `input_ids`, `sampling_params` and `return_logprob`; sampled
 * ids and logprobs come from `meta_info.output_token_logprobs` ([logprob, id, text] triples). `loadPolicy` calls
 * `POST /update_weights_from_disk` with the new model directory (a path the server can read) and `weight_version`;
 * servers that report `meta_info.weight_version` have results stamped with it. With `?lora=1` it loads the version's
 * LoRA adapter instead (`POST /load_lora_adapter`; the server needs `--enable-lora`) and requests name it as their
 * `lora_path`.
 */
const responseSchema = z.object({
  meta_info: z.object({
    output_token_logprobs: z.array(z.tuple([z.number().nullable(), z.number()]).rest(z.unknown())),
    finish_reason: z.union([z.object({ type: z.string() }).loose(), z.string()]).nullish(),
    weight_version: z.union([z.string(), z.number()]).nullish(),
  }),
});

const updateSchema = z.object({ success: z.boolean(), message: z.string().optional() });

export class SglangEngine extends RemoteEngine {
  private readonly adapters = new AdapterSlots();

  constructor(spec: string, options: RemoteOptions) {
    super(spec, options);
  }

  protected async complete(req: GenerateRequest, signal: AbortSignal, emit: Emit): Promise<RemoteCompletion | undefined> {
    const url = `${this.options.baseUrl}/generate`;
    const p = req.params;
    const sampling: Record<string, unknown> = {
      max_new_tokens: p.maxTokens,
      temperature: p.temperature,
      top_p: p.topP,
      top_k: p.topK > 0 ? p.topK : -1,
      min_p: p.minP,
      stop_token_ids: this.tokenizer.stopTokenIds,
      skip_special_tokens: false,
      no_stop_trim: true,
    };
    if (p.seed !== undefined) sampling.sampling_seed = p.seed;
    // SGLang's sampling_params.logit_bias (token id → bias, added to the logits before sampling).
    if (this.textlessBias) sampling.logit_bias = this.textlessBias;
    const body: Record<string, unknown> = { input_ids: req.promptTokens, sampling_params: sampling, return_logprob: true, stream: false };
    if (this.options.model) body.model = this.options.model;
    if (this.adapters.current) body.lora_path = this.adapters.current;
    const raw = await postJson(url, body, this.options.retry, signal);
    if (raw === undefined) return undefined;
    const r = responseSchema.safeParse(Array.isArray(raw) ? raw[0] : raw);
    if (!r.success) throw new EngineError("invalid_engine_response", `${url}: unexpected response shape: ${z.prettifyError(r.error)}`);
    const m = r.data.meta_info;
    emit(
      m.output_token_logprobs.map((x) => x[1]),
      m.output_token_logprobs.map((x) => x[0]),
    );
    const type = typeof m.finish_reason === "string" ? m.finish_reason : m.finish_reason?.type;
    const finishReason: FinishReason = type === "length" ? "length" : type === "abort" ? "abort" : "stop";
    const v = m.weight_version === undefined || m.weight_version === null ? undefined : Number(m.weight_version);
    return { finishReason, ...(v !== undefined && Number.isInteger(v) ? { serverVersion: v } : {}) };
  }

  protected async reloadWeights(modelDir: string, version: number): Promise<void> {
    if (this.options.lora) {
      const once = { ...this.options.retry, retries: 0 };
      const call = async (path: string, body: Record<string, string>): Promise<void> => {
        const url = `${this.options.baseUrl}${path}`;
        const r = updateSchema.extend({ error_message: z.string().optional() }).safeParse(await postJson(url, body, once));
        if (!r.success || !r.data.success) throw new EngineError("weight_update_failed", `${url}: ${r.success ? r.data.error_message || r.data.message || "failed" : "unexpected response"}`);
      };
      return this.adapters.swap(modelDir, version, { load: (name, path) => call("/load_lora_adapter", { lora_name: name, lora_path: path }), unload: (name) => call("/unload_lora_adapter", { lora_name: name }) });
    }
    const url = `${this.options.baseUrl}/update_weights_from_disk`;
    const raw = await postJson(url, { model_path: modelDir, weight_version: String(version) }, { ...this.options.retry, retries: 0 });
    const r = updateSchema.safeParse(raw);
    if (!r.success) throw new EngineError("invalid_engine_response", `${url}: unexpected response: ${JSON.stringify(raw).slice(0, 200)}`);
    if (!r.data.success) throw new EngineError("weight_update_failed", `${url}: ${r.data.message ?? "update failed"}`);
  }
}
