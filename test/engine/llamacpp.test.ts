import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { createEngine } from "../../src/engine/index.js";
import type { LlamaCppEngine } from "../../src/engine/llamacpp/engine.js";
import { llamaCppOptions } from "../../src/engine/llamacpp/options.js";
import { parseEngineSpec } from "../../src/engine/spec.js";

/** The CLI text form after `llamacpp:`, parsed the one way specs are parsed. */
const parseLlamaCppSpec = (arg: string): ReturnType<typeof llamaCppOptions> => llamaCppOptions(parseEngineSpec(`llamacpp:${arg}`));
import { DEFAULT_SAMPLING, isHotSwappable } from "../../src/engine/types.js";
import { loadReferenceModel } from "../../src/weights/reference-forward.js";
import { writeRandomModelDir, type RandomModelSpec } from "../../src/weights/random-model.js";
import { codeCorpus, trainedTokenizerJson } from "../tokenizer/trained-bpe.js";
import { runEngineContract } from "./engine-contract.js";

const root = mkdtempSync(join(tmpdir(), "harnessrl-llamacpp-"));
const cache = join(root, "cache");
afterAll(() => rmSync(root, { recursive: true, force: true }));

const small: Omit<RandomModelSpec, "seed"> = { modelType: "qwen3", hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 128, tieWordEmbeddings: true };
function modelDir(name: string, spec: RandomModelSpec): string {
  const dir = join(root, name);
  if (!existsSync(dir)) writeRandomModelDir(dir, spec);
  return dir;
}
const base = modelDir("base", { ...small, seed: 1 });
const spec = (dir: string, extra = ""): string => `llamacpp:${dir}?threads=1&sequences=8&ctx=8192&cache=${cache}${extra}`;

for (const batch of ["isolated", "shared"] as const) {
  runEngineContract({
    name: `llamacpp (batch=${batch})`,
    create: () => createEngine(spec(base, `&batch=${batch}`)),
    swapTo: () => Promise.resolve({ modelDir: modelDir("swap", { ...small, seed: 2, policyVersion: 1 }), version: 1 }),
  });
}

describe("llamacpp engine", () => {
  it("parses spec options and rejects unknown or invalid ones", () => {
    const o = parseLlamaCppSpec("/m?threads=2&sequences=32&ctx=4096&kv=f16&fa=1&cache=/c&batch=shared");
    expect(o).toMatchObject({ modelDir: "/m", threads: 2, sequences: 32, contextSize: 4096, kvType: "F16", flashAttention: true, cacheDir: "/c", batch: "shared" });
    expect(parseLlamaCppSpec("/m?batch=isolated").batch).toBe("isolated");
    expect(() => parseLlamaCppSpec("/m?batch=mixed")).toThrow(UserError);
    expect(parseLlamaCppSpec("/m?batch=shared&sequences=8&contexts=2")).toMatchObject({ batch: "shared", sequences: 8, contexts: 2 });
    expect(parseLlamaCppSpec("/m?batch=shared").contexts).toBe(1);
    expect(() => parseLlamaCppSpec("/m?contexts=2")).toThrow(/batch=shared/);
    expect(() => parseLlamaCppSpec("/m?batch=shared&sequences=2&contexts=3")).toThrow(/at most sequences=2/);
    expect(() => parseLlamaCppSpec("/m?threads=zero")).toThrow(UserError);
    expect(() => parseLlamaCppSpec("/m?bogus=1")).toThrow(UserError);
    expect(() => parseLlamaCppSpec("")).toThrow(/model directory/);
  });

  for (const modelType of ["qwen3", "qwen2"] as const) {
    it(`samples with logprobs equal to an independent float64 forward pass (${modelType}, temperature 0.7, reused prefix)`, async () => {
      const dir = modelDir(`ref-${modelType}`, { ...small, modelType, tieWordEmbeddings: modelType === "qwen3", seed: 11, std: 0.15 });
      const engine = await createEngine(spec(dir));
      try {
        const ref = loadReferenceModel(dir);
        const prompt = engine.tokenizer.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
        const first = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, temperature: 0.7, maxTokens: 40, seed: 7 } });
        // Second turn extends the first: the engine reuses the cached prefix and evaluates only the new tokens.
        const prompt2 = [...prompt, ...first.tokens, ...engine.tokenizer.encode("\nmore")];
        const second = await engine.generate({ promptTokens: prompt2, params: { ...DEFAULT_SAMPLING, temperature: 0.7, maxTokens: 40, seed: 8 } });
        for (const [p, r] of [[prompt, first], [prompt2, second]] as const) {
          const expected = ref.logprobs([...p, ...r.tokens], 0.7).slice(p.length - 1);
          expect(expected).toHaveLength(r.tokens.length);
          const maxDiff = Math.max(...r.logprobs.map((lp, i) => Math.abs(lp - (expected[i] ?? 0))));
          expect(maxDiff).toBeLessThan(1e-4);
        }
      } finally {
        await engine.close();
      }
    }, 60_000);
  }

  for (const layout of ["batch=shared", "batch=shared&contexts=2"]) {
    it(`samples in shared batches with each sequence's own logprobs while requests join mid-batch (${layout}, large vocabulary, float64 reference)`, async () => {
      // Requests of different lengths keep joining while others decode (lock-step batches mixing prompt and generated
      // tokens, reused prefixes); every token's logprob must still be its own sequence's. The race itself is pinned down
      // by llamacpp-batching.test.ts, which forces llama.cpp to reorder output rows on every batch.
      const dir = modelDir("wide-vocab", { ...small, seed: 12, std: 0.15, vocabSize: 8192 });
      const engine = await createEngine(spec(dir, `&${layout}`));
      try {
        const ref = loadReferenceModel(dir);
        const lengths = [3, 17, 6, 29, 11, 4, 23, 9, 14, 5, 31, 8];
        let next = 0;
        let worst = 0;
        const lane = async (): Promise<void> => {
          for (let k = next++; k < 32; k = next++) {
            const prompt = engine.tokenizer.encode(`<|im_start|>user\n${"abcdefghijklmnopqrstuvwxyz".slice(0, 1 + (k % 26))}<|im_end|>\n<|im_start|>assistant\n`);
            const r = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: lengths[k % lengths.length] ?? 8, seed: k } });
            const expected = ref.logprobs([...prompt, ...r.tokens], 1).slice(prompt.length - 1);
            r.logprobs.forEach((lp, j) => (worst = Math.max(worst, Math.abs(lp - (expected[j] ?? 0)))));
          }
        };
        await Promise.all(Array.from({ length: 8 }, lane));
        expect(worst).toBeLessThan(1e-3);
      } finally {
        await engine.close();
      }
    }, 120_000);
  }

  it("hot-swaps while requests are in flight: old requests finish on the old version, new ones use the new, the old GGUF is removed", async () => {
    const engine = (await createEngine(spec(base))) as LlamaCppEngine;
    try {
      const prompt = engine.tokenizer.encode("<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n");
      let started!: () => void;
      const firstToken = new Promise<void>((r) => (started = r));
      const inflight = Array.from({ length: 3 }, (_, i) =>
        engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 400, seed: 50 + i }, onToken: () => started() }),
      );
      await firstToken;
      const v2 = modelDir("swap2", { ...small, seed: 3 });
      await engine.loadPolicy(v2, 5);
      const fresh = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 5, seed: 1 } });
      expect(fresh.policyVersion).toBe(5);
      const old = await Promise.all(inflight);
      for (const r of old) {
        expect(r.policyVersion).toBe(0);
        expect(r.tokens.length).toBeGreaterThan(0);
      }
      await engine.loadPolicy(modelDir("swap3", { ...small, seed: 4 }), 6);
      // The replaced model's GGUF is removed once its model is disposed, after the swap returns: poll (bounded)
      // rather than sleep a fixed time (100 ms was not enough on a loaded machine).
      const ggufs = (): string[] => readdirSync(cache).filter((f) => f.endsWith(".gguf"));
      for (const until = Date.now() + 20_000; ggufs().some((f) => f.endsWith("-v5.gguf")) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
      const files = ggufs();
      expect(files.some((f) => f.endsWith("-v5.gguf"))).toBe(false);
      expect(files.some((f) => f.endsWith("-v6.gguf"))).toBe(true);
      expect(engine.loadTimings.map((t) => t.version)).toEqual([0, 5, 6]);
    } finally {
      await engine.close();
    }
  }, 60_000);

  it("moves requests still queued for a sequence to the new policy when a swap lands", async () => {
    const engine = await createEngine(spec(base).replace("sequences=8", "sequences=1"));
    try {
      if (!isHotSwappable(engine)) throw new Error("not hot-swappable");
      const prompt = engine.tokenizer.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
      let conclusive = false;
      // One sequence: A holds it, B waits in the queue. If A happens to stop by itself before the swap lands, the
      // round proves nothing and is repeated with another seed.
      for (let seed = 1; seed <= 5 && !conclusive; seed++) {
        const ac = new AbortController();
        let started!: () => void;
        const firstToken = new Promise<void>((r) => (started = r));
        let aDone = false;
        const versionBefore = engine.policyVersion;
        const a = engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 100_000, seed }, signal: ac.signal, onToken: () => started() });
        void a.then(() => (aDone = true));
        await firstToken;
        const b = engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 3, seed: 2 } });
        await engine.loadPolicy(modelDir(`swap-q${seed}`, { ...small, seed: 40 + seed }), 100 + seed);
        conclusive = !aDone;
        ac.abort();
        const [ra, rb] = await Promise.all([a, b]);
        expect(ra.policyVersion).toBe(versionBefore);
        if (conclusive) expect(rb.policyVersion).toBe(100 + seed);
      }
      expect(conclusive).toBe(true);
    } finally {
      await engine.close();
    }
  }, 60_000);

  it("rejects prompt tokens outside the vocabulary and prompts longer than the context", async () => {
    const engine = await createEngine(spec(base, "").replace("ctx=8192", "ctx=64"));
    try {
      await expect(engine.generate({ promptTokens: [1, 99999], params: DEFAULT_SAMPLING })).rejects.toThrow(/outside the vocabulary/);
      await expect(engine.generate({ promptTokens: new Array<number>(300).fill(65), params: DEFAULT_SAMPLING })).rejects.toThrow(/context_length_exceeded|holds/);
      await expect(engine.generate({ promptTokens: [], params: DEFAULT_SAMPLING })).rejects.toThrow(UserError);
    } finally {
      await engine.close();
    }
  }, 60_000);
});

describe("llamacpp engine on a Hugging Face byte-level BPE tokenizer (Qwen-style tokenizer.json)", () => {
  it("exports merges and added tokens, pads vocab_size, serves the model and stops on <|im_end|>", async () => {
    const json = trainedTokenizerJson(codeCorpus(20_000), 60);
    const added = json.added_tokens as { id: number; content: string }[];
    const maxId = Math.max(...added.map((a) => a.id));
    const vocabSize = Math.ceil((maxId + 1) / 64) * 64; // padded like Qwen's 151936 > 151665 tokens
    const dir = modelDir("hf", { ...small, seed: 21, std: 0.15, hfTokenizer: json, vocabSize });
    const engine = await createEngine(spec(dir));
    try {
      const imEnd = added.find((a) => a.content === "<|im_end|>")?.id;
      expect(engine.tokenizer.kind).toBe("hf-bpe");
      expect(engine.tokenizer.stopTokenIds).toContain(imEnd);
      const prompt = engine.tokenizer.encode(engine.renderer.render([{ role: "user", content: "export function hello(): string" }], [], { addGenerationPrompt: true }));
      expect(prompt.some((t) => t >= 256 && t < maxId - 4)).toBe(true); // merges were applied
      const r = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 30, seed: 2 } });
      const expected = loadReferenceModel(dir).logprobs([...prompt, ...r.tokens], 1).slice(prompt.length - 1);
      expect(Math.max(...r.logprobs.map((lp, i) => Math.abs(lp - (expected[i] ?? 0))))).toBeLessThan(1e-4);
      const stopped = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 8000, seed: 3 } });
      expect(stopped.finishReason).toBe("stop");
    } finally {
      await engine.close();
    }
  }, 60_000);
});
