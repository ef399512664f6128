import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaModel } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { llamaRuntime } from "../../src/engine/llamacpp/runtime.js";
import { architectureMetadata } from "../../src/gguf/export.js";
import { readVocab, vocabMetadata } from "../../src/gguf/vocab.js";
import { writeGguf } from "../../src/gguf/writer.js";
import type { GgufValue } from "../../src/gguf/writer.js";
import { HfBpeTokenizer, tokenizerJsonSchema } from "../../src/tokenizer/hf-bpe.js";
import { readModelConfig } from "../../src/weights/config.js";
import { writeRandomModelDir } from "../../src/weights/random-model.js";
import { rng } from "../chat/conversations.js";
import { codeCorpus, trainedTokenizerJson } from "./trained-bpe.js";

/**
 * An independent reference for the HF tokenizer: llama.cpp's own GPT-2 BPE with its `qwen2` pre-tokenizer, loaded
 * vocab-only from a GGUF that holds the same vocabulary and merges. Both must produce the same ids for the same text.
 */
describe("HfBpeTokenizer agrees with llama.cpp's qwen2 BPE tokenizer", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-bpe-ref-"));
  const corpus = codeCorpus(300_000);
  const json = trainedTokenizerJson(corpus, 300);
  const ours = new HfBpeTokenizer(tokenizerJsonSchema.parse(json));
  let model: LlamaModel;

  beforeAll(async () => {
    // Architecture metadata from a tiny random model; the vocabulary from our tokenizer.json (no tensors: vocab only).
    const base = join(root, "base");
    writeRandomModelDir(base, { modelType: "qwen2", hiddenSize: 32, numLayers: 1, numHeads: 2, numKvHeads: 1, intermediateSize: 64, seed: 1 });
    const dir = join(root, "bpe");
    writeRandomModelDir(dir, { modelType: "qwen2", hiddenSize: 32, numLayers: 1, numHeads: 2, numKvHeads: 1, intermediateSize: 64, seed: 1 });
    writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(json));
    const config = readModelConfig(base);
    const metadata = new Map<string, GgufValue>([...architectureMetadata(config, "bpe-ref", 512), ...vocabMetadata(readVocab(dir, ours.vocabSize))]);
    const file = join(root, "vocab.gguf");
    writeGguf(file, metadata, []);
    const llama = await llamaRuntime();
    // llama.cpp may log "missing tensor 'token_embd.weight'" while probing this tensor-less file; vocab-only loading
    // then succeeds, and the next test checks that the loaded vocabulary really is ours.
    model = await llama.loadModel({ modelPath: file, vocabOnly: true });
  }, 120_000);

  afterAll(async () => {
    await model?.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  const same = (text: string): void => {
    expect(ours.encode(text), JSON.stringify(text)).toEqual([...model.tokenize(text, true)]);
  };

  it("on 300 random slices of source code", () => {
    const r = rng(17);
    for (let i = 0; i < 300; i++) {
      const start = Math.floor(r() * (corpus.length - 400));
      same(corpus.slice(start, start + 1 + Math.floor(r() * 400)));
    }
  });

  it("on whitespace runs, contractions, digits, punctuation, unicode and special tokens", () => {
    for (const text of [
      "Hello world",
      "  leading and trailing  ",
      "a\n\n\nb\r\n\tc   \n  d",
      "I'M it's they'RE we'll you'd 'Sam",
      "x = 12345.678 + 0xFF; // 1st 2nd",
      "!!?? ... ---> <== {}[]()",
      "héllo wörld naïve café 中文字符 😀👍🏽 Привет",
      "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
      '<tool_call>\n{"name": "bash", "arguments": {"cmd": "ls -la"}}\n</tool_call><|im_end|>',
      "tabs\t\tand\u00a0nbsp\u2003em space",
    ])
      same(text);
  });

  it("is a real comparison: llama.cpp uses the merges and special tokens of our vocabulary", () => {
    const ids = [...model.tokenize("function hello() { return 1; }<|im_end|>", true)];
    expect(ids.some((id) => id >= 256 && id < ours.vocabSize - 5)).toBe(true);
    expect(ids.at(-1)).toBe(ours.specialTokens.get("<|im_end|>"));
    expect(ids.length).toBeLessThan("function hello() { return 1; }".length);
  });

  it("decodes llama.cpp's ids back to the same text", () => {
    const text = corpus.slice(1000, 3000) + "<|im_end|>";
    expect(ours.decode([...model.tokenize(text, true)])).toBe(text);
  });
});
