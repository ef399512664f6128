import { randomBytes, randomInt } from "node:crypto";
import { hostname } from "node:os";
import { join } from "node:path";
import type { LlamaContextSequence } from "node-llama-cpp";
import { EngineError, UserError, isHarnessRLError } from "../../core/errors.js";
import type { ChatRenderer } from "../../chat/renderer.js";
import { loadCodec } from "../../chat/codec.js";
import { textlessIds } from "../../tokenizer/textless.js";
import type { Tokenizer } from "../../tokenizer/types.js";
import { exportGguf } from "../../gguf/export.js";
import { readModelConfig } from "../../weights/config.js";
import type { FinishReason, GenerateRequest, GenerateResult, HotSwappableEngine, ModelInfo, PromptCountingEngine, PromptTokenCounts } from "../types.js";
import { alignSequence } from "./align-sequence.js";
import { ensureGguf, ggufKey } from "./gguf-cache.js";
import type { LlamaCppOptions } from "./options.js";
import { PolicySlot } from "./policy-slot.js";

/**
 * `llamacpp:<model dir>`: llama.cpp embedded through node-llama-cpp, fed and read as token ids. Sampling uses the
 * untruncated distribution unless the request asks otherwise; each sampled token's logprob is the log of the
 * probability llama.cpp's sampler chain assigned it (after temperature / truncation), i.e. the distribution it was
 * drawn from. Temperature 0 means greedy, and then the logprob reported is the model's (temperature 1) logprob.
 */
export interface LoadTiming {
  version: number;
  exportMs: number;
  loadMs: number;
}

/** Tokens per sequence when `ctx` is not given (KV cache is allocated up front, per sequence). */
export const DEFAULT_CONTEXT_CAP = 8192;

export class LlamaCppEngine implements HotSwappableEngine, PromptCountingEngine {
  readonly spec: string;
  readonly model: ModelInfo;
  readonly tokenizer: Tokenizer;
  readonly renderer: ChatRenderer;
  private current: PolicySlot;
  private readonly vocabSize: number;
  /** Ids of the model's rows without text in its tokenizer: never sampled (textless.ts). */
  private readonly textless: readonly number[];
  private swapChain: Promise<void> = Promise.resolve();
  private closed = false;
  /** Export/load times of every policy version loaded, for benchmarks and logs. */
  readonly loadTimings: LoadTiming[] = [];
  readonly promptTokens: PromptTokenCounts = { evaluated: 0, reused: 0, shared: 0 };
  /**
   * This running engine, unique across hosts and restarts (`llamacpp@<host>/<pid>/<random>`): every result names it,
   * so records say which instance sampled a call when several serve one run (docs/cluster.md).
   */
  readonly instanceId = `llamacpp@${hostname()}/${process.pid}/${randomBytes(4).toString("hex")}`;

  private constructor(spec: string, slot: PolicySlot, vocabSize: number, textless: readonly number[], codec: { tokenizer: Tokenizer; renderer: ChatRenderer }, private readonly opts: LlamaCppOptions) {
    this.spec = spec;
    this.current = slot;
    this.vocabSize = vocabSize;
    this.textless = textless;
    this.tokenizer = codec.tokenizer;
    this.renderer = codec.renderer;
    this.model = { id: opts.modelDir.split("/").filter(Boolean).pop() ?? "policy", contextWindow: slot.contextSize };
  }

  static async create(spec: string, options: LlamaCppOptions): Promise<LlamaCppEngine> {
    const config = readModelConfig(options.modelDir);
    const codec = loadCodec(options.modelDir);
    const { file, exportMs } = ensureGguf(options.modelDir, options.cacheDir);
    const t1 = performance.now();
    // A context longer than the model's positions would run RoPE past what it was made for: refuse it.
    if (options.contextSize !== undefined && options.contextSize > config.maxPositions) {
      throw new UserError("invalid_engine_spec", `ctx=${options.contextSize} exceeds the model's max_position_embeddings (${config.maxPositions}) in ${options.modelDir}`);
    }
    const contextSize = options.contextSize ?? Math.min(DEFAULT_CONTEXT_CAP, config.maxPositions);
    const textless = textlessIds(codec.tokenizer, config.vocabSize);
    const slot = await PolicySlot.load(file, config.policyVersion ?? 0, options, contextSize, false, textless);
    const engine = new LlamaCppEngine(spec, slot, config.vocabSize, textless, codec, options);
    engine.loadTimings.push({ version: slot.version, exportMs, loadMs: performance.now() - t1 });
    return engine;
  }

  /** The current version's shared prompt prefixes (prefix-states.ts): entries and bytes of state files kept. */
  get sharedPrefixes(): { entries: number; bytes: number } {
    const p = this.current.prefixes;
    return { entries: p?.size ?? 0, bytes: p?.bytes ?? 0 };
  }

  get policyVersion(): number {
    return this.current.version;
  }

  /**
   * Loads new weights (a model directory with the same architecture and tokenizer) as `version`. New requests use them
   * as soon as they are loaded; requests in flight finish on the old weights, which are disposed afterwards.
   */
  loadPolicy(modelDir: string, version: number): Promise<void> {
    const run = async (): Promise<void> => {
      if (this.closed) throw new EngineError("engine_closed", "engine is closed");
      const config = readModelConfig(modelDir);
      if (config.vocabSize !== this.vocabSize) throw new UserError("incompatible_policy", `policy ${modelDir} has vocab_size ${config.vocabSize}, the engine serves ${this.vocabSize}`);
      const t0 = performance.now();
      const file = join(this.opts.cacheDir, `${ggufKey(modelDir)}-v${version}.gguf`);
      exportGguf(modelDir, file);
      const t1 = performance.now();
      // Same vocab_size (checked above) and tokenizer (loadPolicy's contract): the same ids stay masked.
      const slot = await PolicySlot.load(file, version, this.opts, this.current.contextSize, true, this.textless);
      const old = this.current;
      this.current = slot;
      old.retire();
      this.loadTimings.push({ version, exportMs: t1 - t0, loadMs: performance.now() - t1 });
    };
    const p = this.swapChain.then(run);
    this.swapChain = p.catch(() => undefined);
    return p;
  }

  private validate(req: GenerateRequest): void {
    const { promptTokens: p, params } = req;
    if (p.length === 0) throw new UserError("empty_prompt", "prompt has no tokens");
    for (const t of p) {
      if (!Number.isInteger(t) || t < 0 || t >= this.vocabSize) throw new UserError("invalid_token", `prompt token ${t} is outside the vocabulary [0, ${this.vocabSize})`);
    }
    if (!(params.temperature >= 0) || !Number.isFinite(params.temperature)) throw new UserError("invalid_sampling_params", `temperature must be ≥ 0, got ${params.temperature}`);
    if (!Number.isInteger(params.maxTokens) || params.maxTokens < 0) throw new UserError("invalid_sampling_params", `maxTokens must be a non-negative integer, got ${params.maxTokens}`);
  }

  async generate(req: GenerateRequest): Promise<GenerateResult> {
    if (this.closed) throw new EngineError("engine_closed", "engine is closed");
    this.validate(req);
    const prompt = req.promptTokens;
    if (req.params.maxTokens === 0) return { tokens: [], logprobs: [], finishReason: "length", policyVersion: this.current.version, engineInstance: this.instanceId };
    // A request queued on a policy that gets replaced before it starts moves to the new one.
    let slot = this.current;
    let seq = await this.acquireOn(slot, req);
    while (seq === "retired") {
      slot = this.current;
      seq = await this.acquireOn(slot, req);
    }
    const tokens: number[] = [];
    const logprobs: number[] = [];
    if (seq === "abort") return { tokens, logprobs, finishReason: "abort", policyVersion: slot.version, engineInstance: this.instanceId };
    let finishReason: FinishReason = "length";
    try {
      const { toEval, reused, shared, published } = await alignSequence(seq, prompt, slot.prefixes, req.signal);
      this.promptTokens.evaluated += toEval.length + published;
      this.promptTokens.reused += reused;
      this.promptTokens.shared += shared;
      const limit = Math.min(req.params.maxTokens, slot.contextSize - prompt.length);
      const stops = new Set(this.tokenizer.stopTokenIds);
      const { temperature, topK, topP, minP } = req.params;
      const seed = req.params.seed === undefined ? randomInt(0, 2 ** 32) : req.params.seed >>> 0;
      if (req.signal?.aborted) return { tokens, logprobs, finishReason: "abort", policyVersion: slot.version, engineInstance: this.instanceId };
      await slot.sample(seq, toEval, { temperature, topK, topP, minP, seed }, (id, probability) => {
        const lp = Math.log(probability);
        tokens.push(id);
        logprobs.push(lp);
        req.onToken?.(id, lp);
        if (stops.has(id)) {
          finishReason = "stop";
          return false;
        }
        if (tokens.length >= limit) return false;
        if (req.signal?.aborted) {
          finishReason = "abort";
          return false;
        }
        return true;
      });
    } catch (e) {
      if (isHarnessRLError(e)) throw e;
      throw new EngineError("llamacpp_failed", `llama.cpp generation failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    } finally {
      slot.release(seq);
    }
    return { tokens, logprobs, finishReason, policyVersion: slot.version, engineInstance: this.instanceId };
  }

  private acquireOn(slot: PolicySlot, req: GenerateRequest): Promise<LlamaContextSequence | "abort" | "retired"> {
    if (req.promptTokens.length >= slot.contextSize) {
      throw new UserError("context_length_exceeded", `prompt has ${req.promptTokens.length} tokens; a llama.cpp sequence holds ${slot.contextSize} (raise ?ctx=, engine.context_size in a run config)`);
    }
    return slot.acquire(req.promptTokens, req.signal);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.swapChain;
    await this.current.dispose();
  }
}
