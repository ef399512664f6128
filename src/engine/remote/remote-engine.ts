import { existsSync } from "node:fs";
import { basename, join } from "node:path";
import { EngineError, UserError } from "../../core/errors.js";
import { defaultCodec, loadCodec, type Codec } from "../../chat/codec.js";
import type { ChatRenderer } from "../../chat/renderer.js";
import { textlessIds } from "../../tokenizer/textless.js";
import type { Tokenizer } from "../../tokenizer/types.js";
import { readModelConfig, type ModelConfig } from "../../weights/config.js";
import type { FinishReason, GenerateRequest, GenerateResult, HotSwappableEngine, ModelInfo } from "../types.js";
import type { RemoteOptions } from "./options.js";

/** How one server round trip ended; its tokens went through `emit` as they became known. */
export interface RemoteCompletion {
  finishReason: FinishReason;
  /** Weight version the server says sampled it, when it says (SGLang `meta_info.weight_version`). */
  serverVersion?: number;
  /** The server's engine instance that sampled it, when it says (`harnessrl serve`); else the server's URL is recorded. */
  serverInstance?: string;
}

/** Delivers sampled tokens in order (checked, recorded, passed to onToken); returns false once the caller aborted. */
export type Emit = (tokenIds: readonly unknown[], logprobs: readonly unknown[]) => boolean;

/**
 * Shared behaviour of token-in/token-out HTTP engines: local tokenizer + chat template from a model directory,
 * request validation, weight-version tracking and the swap gate (requests wait while weights are being replaced so
 * each is stamped with the version that really served it), per-token callbacks and abort handling. Subclasses only
 * speak their server's wire format.
 */
export abstract class RemoteEngine implements HotSwappableEngine {
  readonly spec: string;
  readonly model: ModelInfo;
  readonly tokenizer: Tokenizer;
  readonly renderer: ChatRenderer;
  /** The policy version requests are stamped with; a subclass whose server reports its own version keeps it current. */
  protected version: number;
  /** Recorded as each result's `engineInstance` unless the server names one: the server's URL by default. */
  protected instance: string;
  private swapping: Promise<void> | undefined;
  private closed = false;
  private readonly inflight = new Set<AbortController>();
  /**
   * The model's rows without text in its tokenizer (padded rows, holes: textless.ts) as a logit bias of −100 each,
   * sent with every request so the server never samples one (the proxy could not decode it). −100 because vLLM's
   * OpenAI API clamps biases to ±100; it leaves e^−100 (~4e-44) of their mass, so logprobs equal the trainer's
   * softmax over the ids with text. Undefined when every row has text or config.json is not at hand.
   */
  protected readonly textlessBias: Record<string, number> | undefined;
  /** `?lora=1`: the initial policy directory's adapter, loaded before the first request (once). */
  private initialAdapter: Promise<void> | undefined;

  protected constructor(
    spec: string,
    protected readonly options: RemoteOptions,
  ) {
    this.spec = spec;
    // A model directory's own codec; the policy's (given by a run context) when the server's model has no local directory.
    const codec: Codec = options.modelDir ? loadCodec(options.modelDir) : (options.codec ?? defaultCodec());
    this.tokenizer = codec.tokenizer;
    this.renderer = codec.renderer;
    this.version = options.initialVersion;
    this.instance = options.baseUrl;
    const config = options.modelDir ? localModelConfig(options.modelDir) : undefined;
    const ctx = options.contextWindow ?? config?.maxPositions ?? 32768;
    this.model = { id: options.model ?? (options.modelDir ? basename(options.modelDir) : "default"), contextWindow: ctx };
    const textless = config === undefined ? [] : textlessIds(this.tokenizer, config.vocabSize);
    this.textlessBias = textless.length > 0 ? Object.fromEntries(textless.map((id) => [String(id), TEXTLESS_BIAS])) : undefined;
  }

  get policyVersion(): number {
    return this.version;
  }

  /**
   * One generation round trip in the server's wire format, delivering tokens through `emit` (all at once, or as a
   * stream); `undefined` when aborted by the caller.
   */
  protected abstract complete(req: GenerateRequest, signal: AbortSignal, emit: Emit): Promise<RemoteCompletion | undefined>;

  /** Makes the server serve the weights in `modelDir`. */
  protected abstract reloadWeights(modelDir: string, version: number): Promise<void>;

  async loadPolicy(modelDir: string, version: number): Promise<void> {
    if (this.closed) throw new EngineError("engine_closed", "engine is closed");
    // A swap before the first request supersedes the initial adapter.
    this.initialAdapter ??= Promise.resolve();
    while (this.swapping) await this.swapping.catch(() => undefined);
    const run = (async () => {
      await this.reloadWeights(modelDir, version);
      this.version = version;
    })();
    this.swapping = run.finally(() => {
      this.swapping = undefined;
    });
    await this.swapping;
  }

  async generate(req: GenerateRequest): Promise<GenerateResult> {
    if (this.closed) throw new EngineError("engine_closed", "engine is closed");
    const { promptTokens: p, params } = req;
    if (p.length === 0) throw new UserError("empty_prompt", "prompt has no tokens");
    if (p.some((t) => !Number.isInteger(t) || t < 0)) throw new UserError("invalid_token", "prompt tokens must be non-negative integers");
    if (!(params.temperature >= 0)) throw new UserError("invalid_sampling_params", `temperature must be ≥ 0, got ${params.temperature}`);
    if (this.options.lora && this.options.modelDir) {
      this.initialAdapter ??= this.loadPolicy(this.options.modelDir, this.version);
      await this.initialAdapter;
    }
    while (this.swapping) await this.swapping.catch(() => undefined);
    const version = this.version;
    if (params.maxTokens === 0) return { tokens: [], logprobs: [], finishReason: "length", policyVersion: version, engineInstance: this.instance };
    if (req.signal?.aborted) return { tokens: [], logprobs: [], finishReason: "abort", policyVersion: version, engineInstance: this.instance };
    const ac = new AbortController();
    const onAbort = (): void => ac.abort();
    req.signal?.addEventListener("abort", onAbort, { once: true });
    this.inflight.add(ac);
    const tokens: number[] = [];
    const logprobs: number[] = [];
    const url = this.options.baseUrl;
    // Set when the caller aborted while the server still had tokens for us: the natural finish is then "abort".
    let cut = false;
    const emit: Emit = (ids, lps) => {
      if (ids.length !== lps.length) throw new EngineError("invalid_engine_response", `${url}: ${ids.length} tokens but ${lps.length} logprobs`);
      const checked = this.checkTokens(url, [...ids], [...lps]);
      for (let i = 0; i < checked.tokens.length; i++) {
        if (req.signal?.aborted) {
          cut = true;
          return false;
        }
        const id = checked.tokens[i] as number;
        const lp = checked.logprobs[i] as number;
        tokens.push(id);
        logprobs.push(lp);
        req.onToken?.(id, lp);
      }
      return !req.signal?.aborted;
    };
    try {
      const r = await this.complete(req, ac.signal, emit);
      if (this.closed && !r) throw new EngineError("engine_closed", "engine closed during generation");
      return { tokens, logprobs, finishReason: !r || cut ? "abort" : r.finishReason, policyVersion: r?.serverVersion ?? version, engineInstance: r?.serverInstance ?? this.instance };
    } finally {
      this.inflight.delete(ac);
      req.signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Checks a server's per-token arrays: integer ids, finite logprobs ≤ 0 (tiny positive rounding is clamped). */
  protected checkTokens(url: string, tokens: unknown[], logprobs: unknown[]): { tokens: number[]; logprobs: number[] } {
    const ids = tokens.map((t) => {
      if (typeof t !== "number" || !Number.isInteger(t) || t < 0) throw new EngineError("invalid_engine_response", `${url}: bad token id ${JSON.stringify(t)}`);
      return t;
    });
    const lps = logprobs.map((l) => {
      if (typeof l !== "number" || !Number.isFinite(l)) throw new EngineError("invalid_engine_response", `${url}: bad logprob ${JSON.stringify(l)} (is the server returning logprobs?)`);
      if (l > 1e-4) throw new EngineError("invalid_engine_response", `${url}: logprob ${l} > 0`);
      return Math.min(l, 0);
    });
    return { tokens: ids, logprobs: lps };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const ac of this.inflight) ac.abort();
    await this.swapping?.catch(() => undefined);
  }
}

/** The logit bias that keeps ids without text from being sampled (see RemoteEngine.textlessBias). */
export const TEXTLESS_BIAS = -100;

/** The model directory's config.json when there is a readable one (a server's model need not be local). */
function localModelConfig(modelDir: string): ModelConfig | undefined {
  if (!existsSync(join(modelDir, "config.json"))) return undefined;
  try {
    return readModelConfig(modelDir);
  } catch {
    return undefined;
  }
}
