import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import { compareLogprobs, referenceScorer, sampleSequences, workerScorer, type SampledSequence } from "../../src/train/consistency.js";
import { BYTE_VOCAB_SIZE } from "../../src/tokenizer/bytes.js";
import { writeRandomModelDir } from "../../src/weights/random-model.js";
import { useTorchTrainer } from "./torch-fixture.js";

// A model whose embedding has more rows than its tokenizer has ids, as real Qwen checkpoints are padded (151,936 rows
// for 151,669 ids). Here 512 rows over the byte tokenizer's 265 ids: at this random init about half the probability
// sits on the padded rows, so an engine that samples them does so within a few tokens, and a trainer that does not
// mask them is off by log(1 − padded mass) ≈ −0.6 on every token.
const ROWS = 512;
const torch = useTorchTrainer("harnessrl-padded-vocab-");
const root = torch.root;
const cache = join(root, "cache");
const dir = join(root, "padded");
writeRandomModelDir(dir, { modelType: "qwen3", hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 128, tieWordEmbeddings: true, seed: 3, vocabSize: ROWS });

const sampled: Partial<Record<"isolated" | "shared", SampledSequence[]>> = {};

/** ≥600 completion tokens at temperature 1 from llama.cpp over the padded model (sampled once per batch mode). */
async function sample(batch: "isolated" | "shared"): Promise<SampledSequence[]> {
  const engine = await createEngine(`llamacpp:${dir}?threads=1&sequences=4&batch=${batch}&cache=${cache}`);
  try {
    expect(engine.tokenizer.vocabSize).toBe(BYTE_VOCAB_SIZE);
    const sequences = await sampleSequences(engine, 600, 1, { maxTokensPerSequence: 64, concurrency: 4 });
    // Every completion decodes (what failed before: `token id … is not in this tokenizer's vocabulary`).
    for (const s of sequences) expect(() => engine.tokenizer.decode(s.completion)).not.toThrow();
    return (sampled[batch] = sequences);
  } finally {
    await engine.close();
  }
}

describe("padded vocabulary rows (embedding rows beyond the tokenizer's ids)", () => {
  for (const batch of ["isolated", "shared"] as const) {
    it(`llama.cpp never samples an id without text over ≥600 tokens at temperature 1 (batch=${batch})`, async () => {
      const ids = (await sample(batch)).flatMap((s) => s.completion);
      expect(ids.length).toBeGreaterThanOrEqual(600);
      expect(ids.filter((t) => t >= BYTE_VOCAB_SIZE)).toEqual([]);
    }, 300_000);
  }

  it("the worker's and the reference forward's logprobs of the sampled tokens equal llama.cpp's (softmax over ids with text)", async () => {
    const sequences = sampled.isolated ?? (await sample("isolated"));
    const info = await torch.trainer.load(dir, { dtype: "float32", attention: "eager" });
    expect(info.config.vocab_size).toBe(ROWS);
    const worker = compareLogprobs(sequences, await workerScorer(torch.trainer)(sequences, 1), 1, 0, 0);
    expect(worker.tokens).toBeGreaterThanOrEqual(600);
    expect(worker.maxAbsDelta).toBeLessThanOrEqual(1e-3);
    expect(worker.meanAbsDelta).toBeLessThan(1e-4);
    const reference = compareLogprobs(sequences.slice(0, 4), await referenceScorer(dir)(sequences.slice(0, 4), 1), 1, 0, 0);
    expect(reference.maxAbsDelta).toBeLessThanOrEqual(1e-3);
  }, 300_000);
});
