import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LlamaModel } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCodec } from "../../src/chat/codec.js";
import { createEngine } from "../../src/engine/index.js";
import type { SamplingEngine } from "../../src/engine/types.js";
import { llamaRuntime } from "../../src/engine/llamacpp/runtime.js";
import { exportGguf } from "../../src/gguf/export.js";
import { describeModelDir } from "../../src/model/model-dir.js";
import { compareLogprobs, sampleSequences, workerScorer } from "../../src/train/consistency.js";
import { createTrainer } from "../../src/trainer/index.js";
import type { Trainer } from "../../src/trainer/types.js";
import { loadTokenizer } from "../../src/tokenizer/load.js";
import { qwen3TokenizerFiles } from "../../src/tokenizer/qwen3-data.js";
import { startProxy } from "../proxy/helpers.js";

/**
 * The directory a user's real Qwen3 checkpoint has, made here: `harnessrl model init --preset qwen3-tiny` (Qwen3's
 * tokenizer files and official template, sharded safetensors) → the worker loads it and saves a new policy version
 * sharded → our GGUF export reads the shards → llama.cpp tokenizes like our tokenizer and samples with the logprobs
 * the worker teacher-forces (what `harnessrl doctor consistency` checks) → the proxy renders a tool conversation
 * through the official template into exactly our tokenizer's ids.
 */
const root = mkdtempSync(join(tmpdir(), "hrl-qwen3-dir-"));
const dir = join(root, "qwen3-tiny");
const v1 = join(root, "v1");
const cache = join(root, "cache");
const cli = join(import.meta.dirname, "..", "..", "dist", "cli", "main.js");
const SHARDS = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"];
let trainer: Trainer;
let engine: SamplingEngine | undefined;
let vocabModel: LlamaModel | undefined;

beforeAll(async () => {
  const r = spawnSync(process.execPath, [cli, "model", "init", "--preset", "qwen3-tiny", "--seed", "9", dir], { encoding: "utf8", env: { ...process.env, HARNESSRL_TORCH_THREADS: "1" } });
  expect(r.status, r.stderr).toBe(0);
  trainer = await createTrainer("torch");
}, 240_000);

afterAll(async () => {
  await vocabModel?.dispose();
  await engine?.close();
  await trainer.close();
  rmSync(root, { recursive: true, force: true });
});

const weightFiles = (d: string): string[] => readdirSync(d).filter((f) => f.startsWith("model") && f.endsWith(".safetensors")).sort();

describe("a qwen3-tiny model directory through the worker, the GGUF export, llama.cpp and the proxy", () => {
  it("model init writes a Qwen3ForCausalLM directory: official tokenizer files, generation config, two shards and an index", () => {
    const config = JSON.parse(readFileSync(join(dir, "config.json"), "utf8")) as Record<string, unknown>;
    expect(config).toMatchObject({ architectures: ["Qwen3ForCausalLM"], model_type: "qwen3", vocab_size: 151_669, tie_word_embeddings: true, max_position_embeddings: 40_960, eos_token_id: 151_645 });
    // Byte for byte (Buffer.equals: a deep toEqual over 11 MB takes minutes).
    expect(readFileSync(join(dir, "tokenizer.json")).equals(readFileSync(qwen3TokenizerFiles().tokenizerJson))).toBe(true);
    expect(readFileSync(join(dir, "tokenizer_config.json")).equals(readFileSync(qwen3TokenizerFiles().tokenizerConfigJson))).toBe(true);
    expect(existsSync(join(dir, "generation_config.json"))).toBe(true);
    expect(weightFiles(dir)).toEqual(SHARDS);
    const summary = describeModelDir(dir);
    expect(summary).toMatchObject({ parameters: 9_854_720, preset: "qwen3-tiny", seed: 9, tokenizer: "hf", hasChatTemplate: true });
    expect(summary.files.map((f) => f.split("/").pop())).toEqual(SHARDS);
  });

  it("the worker loads the shards and saves a new policy version sharded; the export reads those shards and llama.cpp tokenizes like we do", async () => {
    const loaded = await trainer.load(dir, { dtype: "float32", attention: "eager" });
    expect(loaded.parameters).toBe(9_854_720);
    await trainer.save(v1, { policyVersion: 1 });
    expect(weightFiles(v1)).toEqual(SHARDS);
    expect(existsSync(join(v1, "model.safetensors.index.json"))).toBe(true);
    const gguf = join(root, "v1.gguf");
    const exported = exportGguf(v1, gguf);
    expect(exported.config.vocabSize).toBe(151_669);
    vocabModel = await (await llamaRuntime()).loadModel({ modelPath: gguf, vocabOnly: true });
    const codec = loadCodec(v1);
    const text = codec.renderer.render(
      [
        { role: "system", content: "You are a coding agent. Работай аккуратно; 日本語も 👍" },
        { role: "user", content: "Read README.md and fix `parse(\"3\")`." },
      ],
      [{ name: "read_file", description: "Reads a file.", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } }],
      { addGenerationPrompt: true },
    );
    expect([...vocabModel.tokenize(text, true)]).toEqual(codec.tokenizer.encode(text));
  }, 240_000);

  it("llama.cpp's sampling logprobs equal the worker's teacher-forced logprobs within 1e-3 (the doctor consistency check)", async () => {
    await trainer.load(v1, { dtype: "float32", attention: "eager" });
    engine = await createEngine(`llamacpp:${v1}?threads=1&sequences=4&cache=${cache}`);
    const sequences = await sampleSequences(engine, 256, 1, { maxTokensPerSequence: 64, concurrency: 4 });
    const report = compareLogprobs(sequences, await workerScorer(trainer)(sequences, 1), 1, 0, 0);
    expect(report.tokens).toBeGreaterThanOrEqual(256);
    // A random model's samples spread over the whole vocabulary, Qwen3's special tokens included.
    expect(new Set(sequences.flatMap((s) => s.completion)).size).toBeGreaterThan(100);
    expect(report.maxAbsDelta).toBeLessThanOrEqual(1e-3);
    expect(report.meanAbsDelta).toBeLessThan(1e-4);
    await engine.close();
    engine = undefined;
  }, 300_000);

  it("the proxy renders a tool conversation through the official Qwen3 template into exactly our tokenizer's ids", async () => {
    // The directory as `model init` wrote it; the proxy takes the engine's codec (loadCodec: tokenizer.json + template).
    const llama = await createEngine(`llamacpp:${dir}?threads=1&sequences=1&cache=${cache}`);
    const proxy = await startProxy(() => ({ content: "" }), { engineOverride: llama }); // closes the engine
    try {
      const { sessionId, apiKey } = proxy.session("qwen3-dir");
      await proxy.openai(apiKey).chat.completions.create({
        model: llama.model.id,
        max_tokens: 4,
        temperature: 1,
        messages: [
          { role: "system", content: "You are a coding agent." },
          { role: "user", content: "Read README.md" },
          { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path": "README.md"}' } }] },
          { role: "tool", tool_call_id: "call_1", content: "# Title\nhello 世界" },
        ],
        tools: [{ type: "function", function: { name: "read_file", description: "Reads a file.", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } } }],
      });
      const [record] = proxy.calls(sessionId);
      if (!record) throw new Error("no call recorded");
      const tokenizer = loadTokenizer(dir);
      const text = tokenizer.decode(record.promptTokens);
      // The official template's own text, written out: tools block in the system turn, the call in <tool_call>, the
      // result as a user turn in <tool_response>, and the generation prompt.
      expect(text.startsWith("<|im_start|>system\nYou are a coding agent.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{")).toBe(true);
      expect(text).toContain('"name": "read_file"');
      expect(text.endsWith(
        '</tool_call><|im_end|>\n<|im_start|>user\nRead README.md<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "read_file", "arguments": {"path": "README.md"}}\n</tool_call><|im_end|>\n' +
          "<|im_start|>user\n<tool_response>\n# Title\nhello 世界\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
      )).toBe(true);
      expect(record.promptTokens).toEqual(tokenizer.encode(text));
      expect(record.promptTokens).toEqual(tokenizer.encode(loadCodec(dir).renderer.render(record.messages, record.tools, { addGenerationPrompt: true })));
      // ChatML markers are single special ids, not spelled out in bytes.
      expect(record.promptTokens.filter((t) => t === 151_644).length).toBe(5);
      expect(record.promptTokens.filter((t) => t === 151_645).length).toBe(4);
    } finally {
      await proxy.close();
    }
  }, 120_000);
});
