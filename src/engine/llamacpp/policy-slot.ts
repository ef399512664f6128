import { rmSync } from "node:fs";
import { TokenBias, type LlamaContext, type LlamaContextSequence, type LlamaModel, type Token } from "node-llama-cpp";
import { EngineError, InfraError } from "../../core/errors.js";
import { llamaRuntime } from "./runtime.js";
import { LockstepBatcher, sampleTokens, type OnSample, type SamplerSettings } from "./lockstep-batcher.js";
import type { LlamaCppOptions } from "./options.js";
import { gateOutputReorder } from "./output-reorder-gate.js";
import { PrefixStates } from "./prefix-states.js";

/** Where a sequence lives: its context's scheduler (shared contexts only) and its llama.cpp sequence id there. */
interface Placement {
  context: number;
  /** getSequence() hands ids out in order, so this is the sequence's id in its context. */
  order: number;
  batcher: LockstepBatcher | undefined;
}

/**
 * One loaded policy version: a llama.cpp model, N sequences (by default each in its own context; optionally spread
 * over a few contexts whose sequences are decoded in one batch each), and a pool that hands out sequences. A free
 * sequence keeps its KV cache, and the pool picks the one sharing the longest prefix with the new prompt (among equals:
 * the context running the fewest requests, then the lowest sequence id, which keeps a batch's ids consecutive), so a
 * harness's growing conversation only evaluates its new tokens. Retiring a slot lets in-flight requests finish before
 * the model is disposed.
 */
export class PolicySlot {
  private readonly free: LlamaContextSequence[] = [];
  private readonly placement = new Map<LlamaContextSequence, Placement>();
  /** Requests running per context. */
  private readonly running: number[];
  private readonly waiters: (() => void)[] = [];
  private active = 0;
  private retired = false;
  private disposed: Promise<void> | undefined;
  /** Prompt prefixes evaluated once for all sequences of this version; undefined with one sequence or `share=0`. */
  readonly prefixes: PrefixStates | undefined;

  private constructor(
    readonly version: number,
    readonly ggufFile: string,
    private readonly model: LlamaModel,
    private readonly contexts: readonly LlamaContext[],
    private readonly ownsFile: boolean,
    /** Ids without text (textless.ts) at −inf, built once per model load; undefined when every row has text. */
    private readonly tokenBias: TokenBias | undefined,
    share: { minTokens: number; maxBytes: number },
  ) {
    contexts.forEach((context, c) => {
      // A shared context steps all its running requests together (lockstep-batcher.ts).
      const batcher = context.totalSequences > 1 ? new LockstepBatcher() : undefined;
      for (let i = 0; i < context.totalSequences; i++) {
        const seq = context.getSequence();
        this.free.push(seq);
        this.placement.set(seq, { context: c, order: i, batcher });
      }
    });
    this.running = contexts.map(() => 0);
    const sequences = contexts.reduce((n, c) => n + c.totalSequences, 0);
    this.prefixes = sequences > 1 && share.minTokens > 0 ? new PrefixStates(share) : undefined;
  }

  static async load(ggufFile: string, version: number, options: LlamaCppOptions, contextSize: number, ownsFile: boolean, textless: readonly number[]): Promise<PolicySlot> {
    const llama = await llamaRuntime();
    let model: LlamaModel | undefined;
    try {
      model = await llama.loadModel({ modelPath: ggufFile, gpuLayers: 0, defaultContextFlashAttention: options.flashAttention });
      const m = model;
      // Isolated: one context per sequence, so no decode batch ever mixes sequences (see LlamaCppOptions.batch).
      const count = options.batch === "shared" ? options.contexts : options.sequences;
      const contexts: LlamaContext[] = [];
      for (let i = 0; i < count; i++) {
        const perContext = Math.floor(options.sequences / count) + (i < options.sequences % count ? 1 : 0);
        const context = await m.createContext({
          sequences: perContext,
          contextSize,
          threads: options.threads,
          flashAttention: options.flashAttention,
          experimentalKvCacheKeyType: options.kvType,
          experimentalKvCacheValueType: options.kvType,
          failedCreationRemedy: false,
        });
        contexts.push(context);
        // Several sequences sample concurrently from one logits buffer: see output-reorder-gate.ts.
        if (perContext > 1) gateOutputReorder(context);
      }
      // A TokenBias belongs to its model's tokenizer (node-llama-cpp checks), so each loaded version builds its own.
      // "never" is −inf, applied first in the sampler chain: such an id is never drawn, and the probability llama.cpp
      // reports is that of the distribution over the ids with text, as the trainer computes it.
      const tokenBias = textless.length > 0 ? new TokenBias(m.tokenizer).set(textless as Token[], "never") : undefined;
      return new PolicySlot(version, ggufFile, model, contexts, ownsFile, tokenBias, { minTokens: options.shareMinTokens, maxBytes: options.shareMaxBytes });
    } catch (e) {
      await model?.dispose();
      throw new EngineError("llamacpp_load_failed", `llama.cpp could not load ${ggufFile}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
  }

  /** Tokens one sequence can hold. */
  get contextSize(): number {
    return (this.contexts[0] as LlamaContext).contextSize;
  }

  /**
   * Waits for a free sequence; returns the one whose cached tokens share the longest prefix with `prompt`, `"abort"`
   * if the signal fired first, or `"retired"` if a newer policy took over before this request started (the caller
   * then moves it to the new slot).
   */
  async acquire(prompt: readonly number[], signal?: AbortSignal): Promise<LlamaContextSequence | "abort" | "retired"> {
    if (this.retired) return "retired";
    this.active++;
    while (this.free.length === 0) {
      if (signal?.aborted) return this.leave("abort");
      if (this.retired) return this.leave("retired");
      await new Promise<void>((resolve) => {
        const onAbort = (): void => {
          const i = this.waiters.indexOf(wake);
          if (i >= 0) this.waiters.splice(i, 1);
          resolve();
        };
        const wake = (): void => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        };
        this.waiters.push(wake);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    }
    if (signal?.aborted) return this.leave("abort");
    let best = 0;
    let bestKey = [-1, 0, 0];
    this.free.forEach((s, i) => {
      const at = this.placementOf(s);
      const key = [s.compareContextTokens(prompt as Token[]).firstDifferentIndex, -(this.running[at.context] ?? 0), -at.order];
      if (isGreater(key, bestKey)) {
        best = i;
        bestKey = key;
      }
    });
    const [seq] = this.free.splice(best, 1) as [LlamaContextSequence];
    this.countRunning(seq, 1);
    return seq;
  }

  private countRunning(seq: LlamaContextSequence, delta: number): void {
    const c = this.placementOf(seq).context;
    this.running[c] = (this.running[c] ?? 0) + delta;
  }

  private placementOf(seq: LlamaContextSequence): Placement {
    const at = this.placement.get(seq);
    if (!at) throw new InfraError("internal", "sequence does not belong to this policy slot");
    return at;
  }

  private leave<T>(x: T): T {
    this.active--;
    this.maybeDispose();
    return x;
  }

  /**
   * Evaluates `input` on an acquired sequence and samples until `onSample` returns false: in lock-step with the other
   * requests of a shared context, or on its own when the sequence has its context to itself.
   */
  async sample(seq: LlamaContextSequence, input: readonly number[], settings: SamplerSettings, onSample: OnSample): Promise<void> {
    const { batcher, order } = this.placementOf(seq);
    if (batcher) return batcher.run(seq, order, input, settings, onSample, this.tokenBias);
    for await (const out of sampleTokens(seq, input, settings, this.tokenBias)) if (!onSample(out.token as number, out.confidence)) break;
  }

  /** Returns a sequence to the pool (its KV cache stays for prefix reuse). */
  release(seq: LlamaContextSequence): void {
    this.free.push(seq);
    this.countRunning(seq, -1);
    this.active--;
    this.waiters.shift()?.();
    this.maybeDispose();
  }

  /** No new requests (queued ones are released to move on); disposes the model once in-flight ones finish. */
  retire(): void {
    this.retired = true;
    for (const wake of this.waiters.splice(0)) wake();
    this.maybeDispose();
  }

  private maybeDispose(): void {
    if (this.retired && this.active === 0) void this.dispose();
  }

  /** Disposes now (in-flight generations fail). Idempotent. */
  dispose(): Promise<void> {
    this.retired = true;
    this.disposed ??= (async () => {
      this.prefixes?.dispose();
      for (const context of this.contexts) await context.dispose().catch(() => undefined);
      await this.model.dispose().catch(() => undefined);
      if (this.ownsFile) rmSync(this.ggufFile, { force: true });
    })();
    return this.disposed;
  }

  /** Resolves when a retired slot has been disposed. */
  async drained(): Promise<void> {
    await this.disposed;
  }
}

/** Lexicographic comparison of equal-length number tuples. */
function isGreater(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x > y;
  }
  return false;
}
