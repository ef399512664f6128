import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import type { LlamaCppEngine } from "../../src/engine/llamacpp/engine.js";
import { DEFAULT_SAMPLING } from "../../src/engine/types.js";
import { writeRandomModelDir } from "../../src/weights/random-model.js";

const root = mkdtempSync(join(tmpdir(), "harnessrl-llamacpp-long-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

// One layer, two small heads. Prompt evaluation is quadratic in its length: llama.cpp's exact path (fa=0) took 13 s for
// 8k tokens on this machine (~200 s for 33k), flash attention (fa=1) 2.8 s, so the 33k prompt uses fa=1 (docs/engines.md).
const dir = join(root, "long");
writeRandomModelDir(dir, { modelType: "qwen3", hiddenSize: 32, numLayers: 1, numHeads: 2, numKvHeads: 1, intermediateSize: 64, seed: 5, maxPositions: 40960 });
const spec = (ctx: number): string => `llamacpp:${dir}?threads=1&sequences=1&ctx=${ctx}&fa=1&cache=${join(root, "cache")}`;

describe("llama.cpp long contexts", () => {
  it("serves a 33k-token prompt in a 36k context, and a session's second turn evaluates only what it added", async () => {
    const engine = (await createEngine(spec(36_864))) as LlamaCppEngine;
    try {
      expect(engine.model.contextWindow).toBe(36_864);
      const text = Array.from({ length: 3300 }, (_, i) => `line ${String(i).padStart(4, "0")}`).join("\n");
      const prompt = engine.tokenizer.encode(`<|im_start|>user\n${text}<|im_end|>\n<|im_start|>assistant\n`);
      expect(prompt.length).toBeGreaterThan(32_768);
      const first = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 16, seed: 1 } });
      expect(first.tokens.length).toBeGreaterThan(0);
      expect(first.logprobs.every((lp) => Number.isFinite(lp) && lp <= 0)).toBe(true);
      expect(engine.promptTokens).toEqual({ evaluated: prompt.length, reused: 0, shared: 0 });

      // The harness's next call: the conversation so far, the sampled turn, a tool result.
      const added = engine.tokenizer.encode("<|im_end|>\n<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n<|im_start|>assistant\n");
      const prompt2 = [...prompt, ...first.tokens, ...added];
      const second = await engine.generate({ promptTokens: prompt2, params: { ...DEFAULT_SAMPLING, maxTokens: 16, seed: 2 } });
      expect(second.tokens.length).toBeGreaterThan(0);
      const reused = engine.promptTokens.reused;
      // Everything up to the last sampled token was cached (the last one was sampled but never evaluated).
      expect(reused).toBeGreaterThanOrEqual(prompt.length + first.tokens.length - 1);
      expect(engine.promptTokens.evaluated - prompt.length).toBe(prompt2.length - reused);
      expect(engine.promptTokens.evaluated - prompt.length).toBeLessThanOrEqual(added.length + 1);
    } finally {
      await engine.close();
    }
  }, 180_000);

  it("refuses a context longer than the model's positions, and prompts longer than the context", async () => {
    await expect(createEngine(spec(65_536))).rejects.toThrow(/exceeds the model's max_position_embeddings \(40960\)/);
    const engine = await createEngine(spec(1024));
    try {
      const prompt = engine.tokenizer.encode("x".repeat(2000));
      await expect(engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 4 } })).rejects.toMatchObject({ code: "context_length_exceeded" });
    } finally {
      await engine.close();
    }
  }, 60_000);
});
