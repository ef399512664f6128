import { PACKED_BATCH_VERSION, type PackedBatch, type PackedRow } from "../batch/types.js";
import { InfraError } from "../core/errors.js";
import type { Trainer } from "../trainer/types.js";
import { loadReferenceModel } from "../weights/reference-forward.js";
import { DEFAULT_SAMPLING, type SamplingEngine } from "../engine/types.js";

/**
 * Training–inference consistency: sample sequences with an engine, teacher-force the same tokens with a scorer (the
 * PyTorch worker, or the TypeScript reference forward), and compare the engine's sampling logprobs with the scorer's
 * per token. Both sides score log_softmax(logits / T) at the sampling temperature.
 */
export interface SampledSequence {
  prompt: number[];
  completion: number[];
  /** The engine's logprob of each completion token. */
  logprobs: number[];
}

/** Teacher-forced logprobs of each sequence's completion tokens (same shape as `completion`). */
export type Scorer = (sequences: readonly SampledSequence[], temperature: number) => Promise<number[][]>;

export interface ConsistencyReport {
  sequences: number;
  tokens: number;
  temperature: number;
  meanAbsDelta: number;
  maxAbsDelta: number;
  /** Mean of engine logprob − scorer logprob (sign shows a systematic bias). */
  meanDelta: number;
  samplingMs: number;
  scoringMs: number;
}

const PROMPTS = ["Say hello.", "List three colours.", "What is 2 + 2?", "Write a haiku about rain.", "Call a tool to read README.md.", "Explain RL briefly.", "Count to ten.", "Name a prime number."];

/**
 * Samples at least `minTokens` completion tokens with fixed seeds, keeping `concurrency` requests in flight: a lane
 * starts its next request as soon as its last one ends, so requests join while others decode (as rollouts do).
 * Sequences come back in request order.
 */
export async function sampleSequences(engine: SamplingEngine, minTokens: number, temperature: number, options: { maxTokensPerSequence?: number; concurrency?: number; topK?: number } = {}): Promise<SampledSequence[]> {
  const { maxTokensPerSequence = 256, concurrency = 8, topK = 0 } = options;
  const done: { k: number; sequence: SampledSequence }[] = [];
  let total = 0;
  let next = 0;
  const lane = async (): Promise<void> => {
    while (total < minTokens) {
      const k = next++;
      const text = engine.renderer.render([{ role: "user", content: PROMPTS[k % PROMPTS.length] ?? "" }], [], { addGenerationPrompt: true });
      const prompt = engine.tokenizer.encode(text);
      const r = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, temperature, topK, maxTokens: maxTokensPerSequence, seed: 1000 + k } });
      if (r.tokens.length === 0) continue;
      done.push({ k, sequence: { prompt, completion: r.tokens, logprobs: r.logprobs } });
      total += r.tokens.length;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return done.sort((a, b) => a.k - b.k).map((d) => d.sequence);
}

export function compareLogprobs(sequences: readonly SampledSequence[], scored: readonly number[][], temperature: number, samplingMs: number, scoringMs: number): ConsistencyReport {
  let n = 0;
  let sumAbs = 0;
  let sum = 0;
  let max = 0;
  sequences.forEach((s, i) => {
    const ref = scored[i] ?? [];
    if (ref.length !== s.logprobs.length) throw new InfraError("internal", `scorer returned ${ref.length} logprobs for a ${s.logprobs.length}-token completion`);
    s.logprobs.forEach((lp, j) => {
      const d = lp - (ref[j] ?? 0);
      n++;
      sum += d;
      sumAbs += Math.abs(d);
      max = Math.max(max, Math.abs(d));
    });
  });
  return { sequences: sequences.length, tokens: n, temperature, meanAbsDelta: n ? sumAbs / n : 0, maxAbsDelta: max, meanDelta: n ? sum / n : 0, samplingMs, scoringMs };
}

/** One flat row per sequence: prompt tokens as context, completion tokens trainable. */
export function sequencesToBatch(sequences: readonly SampledSequence[]): PackedBatch {
  const rows: PackedRow[] = sequences.map((s) => {
    const tokens = Int32Array.from([...s.prompt, ...s.completion]);
    const n = tokens.length;
    const trainable = new Uint8Array(n);
    const oldLogprobs = new Float32Array(n);
    const policyVersion = new Int32Array(n).fill(-1);
    s.completion.forEach((_, j) => {
      trainable[s.prompt.length + j] = 1;
      oldLogprobs[s.prompt.length + j] = s.logprobs[j] ?? 0;
      policyVersion[s.prompt.length + j] = 0;
    });
    return {
      tokens,
      parent: Int32Array.from({ length: n }, (_, i) => i - 1),
      positions: Int32Array.from({ length: n }, (_, i) => i),
      trainable,
      oldLogprobs,
      policyVersion,
      advantages: new Float32Array(n),
      lossWeights: new Float32Array(n),
      actionMask: new Uint8Array(n),
      argsMask: new Uint8Array(n),
    };
  });
  return { version: PACKED_BATCH_VERSION, rows, meta: { source: "doctor consistency" } };
}

/** Scores with the PyTorch worker's `logprobs` op (the model must already be loaded in float32). */
export function workerScorer(trainer: Trainer): Scorer {
  return async (sequences, temperature) => {
    const scores = await trainer.logprobs(sequencesToBatch(sequences), { temperature, entropy: false });
    return sequences.map((s, i) => Array.from((scores.logprobs[i] ?? new Float32Array()).subarray(s.prompt.length, s.prompt.length + s.completion.length)));
  };
}

/** Scores with the TypeScript float64 reference forward (slow; small models only). */
export function referenceScorer(modelDir: string): Scorer {
  const model = loadReferenceModel(modelDir);
  return (sequences, temperature) => Promise.resolve(sequences.map((s) => model.logprobs([...s.prompt, ...s.completion], temperature).slice(s.prompt.length - 1)));
}

/**
 * With `topK` > 0 the engine samples from the top K and reports logprobs renormalised over them, while the scorer
 * scores the whole distribution: each token's Δ is then −log of the top K's share at that position (≥ 0), so the
 * report measures the probability mass that `sampling.top_k` leaves out for this policy.
 */
export async function checkConsistency(engine: SamplingEngine, scorer: Scorer, options: { tokens: number; temperature: number; topK?: number }): Promise<ConsistencyReport> {
  const t0 = performance.now();
  const sequences = await sampleSequences(engine, options.tokens, options.temperature, { topK: options.topK ?? 0 });
  const t1 = performance.now();
  const scored = await scorer(sequences, options.temperature);
  return compareLogprobs(sequences, scored, options.temperature, t1 - t0, performance.now() - t1);
}
