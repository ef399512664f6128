import type { LlamaContextSequence, SequenceEvaluateOutput, Token, TokenBias } from "node-llama-cpp";

/** Sampler settings of one request (llama.cpp's chain: temperature, then top-k / top-p / min-p, then the draw). */
export interface SamplerSettings {
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number;
}

/** Called with each sampled token and the probability the sampler chain gave it; returns false to stop. */
export type OnSample = (token: number, probability: number) => boolean;

type Output = SequenceEvaluateOutput<{ readonly confidence: true }>;

/**
 * Evaluates `input` on `seq`, then yields one sampled token (with its probability) per `next()`. `tokenBias` (the
 * policy slot's: ids without text at −inf, see policy-slot.ts) is applied first in llama.cpp's chain, so the
 * probability reported is that of the distribution over the ids with text.
 */
export function sampleTokens(seq: LlamaContextSequence, input: readonly number[], settings: SamplerSettings, tokenBias?: TokenBias): AsyncGenerator<Output, void, void> {
  const { temperature, topK, topP, minP, seed } = settings;
  return seq.evaluateWithMetadata(input as Token[], { confidence: true }, { temperature, topK, topP, minP, seed, yieldEogToken: true, ...(tokenBias ? { tokenBias } : {}) });
}

interface Job {
  tokens: AsyncGenerator<Output, void, void>;
  /** llama.cpp sequence id: each step queues its decodes in this order. */
  order: number;
  onSample: OnSample;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/**
 * Lock-step scheduler for the sequences of one shared llama.cpp context: each step asks every running request's
 * generator for its next token in the same tick, so node-llama-cpp decodes them in one batch; the tokens go to their
 * requests, and only then does the next step start (requests that arrive meanwhile join it).
 *
 * Why not let each request iterate on its own: node-llama-cpp decodes whatever is queued the moment a batch's sampling
 * ends, and requests re-queue at different times (their sampling finishes on different libuv threads), so one batch
 * fragments into out-of-phase groups (measured: 2.6 sequences per decode with 8 running). Steps queue in sequence-id
 * order because llama.cpp (non-unified KV cache) puts only consecutive ascending sequence ids into one micro-batch;
 * any other order costs extra graph evaluations.
 */
export class LockstepBatcher {
  private running: Job[] = [];
  private joining: Job[] = [];
  private looping = false;

  /**
   * Evaluates `input` on `seq` (placed at `order` in each batch), then samples until `onSample` returns false.
   * Resolves once the sequence is idle again; rejects if llama.cpp fails or `onSample` throws.
   */
  run(seq: LlamaContextSequence, order: number, input: readonly number[], settings: SamplerSettings, onSample: OnSample, tokenBias?: TokenBias): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.joining.push({ tokens: sampleTokens(seq, input, settings, tokenBias), order, onSample, resolve, reject });
      if (this.looping) return;
      this.looping = true;
      // Start on the next turn of the event loop, so requests that become ready together share the first step.
      setImmediate(() => void this.loop());
    });
  }

  private async loop(): Promise<void> {
    try {
      while (this.running.length + this.joining.length > 0) {
        this.running.push(...this.joining.splice(0));
        this.running.sort((a, b) => a.order - b.order);
        const outcomes = await Promise.allSettled(this.running.map((job) => job.tokens.next()));
        const next: Job[] = [];
        this.running.forEach((job, i) => {
          const outcome = outcomes[i];
          try {
            if (outcome === undefined || outcome.status === "rejected") throw outcome?.reason;
            const out = outcome.value;
            if (!out.done && job.onSample(out.value.token as number, out.value.confidence)) {
              next.push(job);
              return;
            }
            job.tokens.return().then(() => job.resolve(), job.reject);
          } catch (e) {
            job.tokens.return().then(() => job.reject(e), () => job.reject(e));
          }
        });
        this.running = next;
      }
    } finally {
      this.looping = false;
    }
  }
}
