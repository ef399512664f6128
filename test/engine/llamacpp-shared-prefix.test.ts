import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import type { LlamaCppEngine } from "../../src/engine/llamacpp/engine.js";
import { DEFAULT_SAMPLING, type GenerateResult } from "../../src/engine/types.js";
import { writeRandomModelDir } from "../../src/weights/random-model.js";

// Shared prompt prefixes (src/engine/llamacpp/prefix-states.ts) on real llama.cpp: a random qwen3-architecture model
// with the byte tokenizer, 2 layers and 2 KV heads of 32 (1 KiB of F32 KV per token), prompts of ~2k tokens.
const root = mkdtempSync(join(tmpdir(), "harnessrl-shared-prefix-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const dir = join(root, "model");
writeRandomModelDir(dir, { modelType: "qwen3", hiddenSize: 64, numLayers: 2, numHeads: 2, numKvHeads: 2, intermediateSize: 64, seed: 11, maxPositions: 8192 });
const dir2 = join(root, "model-v2");
writeRandomModelDir(dir2, { modelType: "qwen3", hiddenSize: 64, numLayers: 2, numHeads: 2, numKvHeads: 2, intermediateSize: 64, seed: 12, maxPositions: 8192 });
const spec = (query: string): string => `llamacpp:${dir}?threads=1&ctx=4096&cache=${join(root, "cache")}&${query}`;

// A harness's first prompt: a long system prompt the same for every task, then the task.
const system = Array.from({ length: 60 }, (_, i) => `tool ${String(i).padStart(3, "0")}: run a shell command.`).join("\n");
const promptOf = (engine: LlamaCppEngine, task: string): number[] =>
  engine.tokenizer.encode(`<|im_start|>system\n${system}<|im_end|>\n<|im_start|>user\n${task}<|im_end|>\n<|im_start|>assistant\n`);
const params = (seed: number) => ({ ...DEFAULT_SAMPLING, maxTokens: 24, seed });

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

function expectSameSamples(a: GenerateResult[], b: GenerateResult[]): void {
  a.forEach((r, i) => {
    const other = b[i] as GenerateResult;
    expect(r.tokens).toEqual(other.tokens);
    r.logprobs.forEach((lp, j) => expect(Math.abs(lp - (other.logprobs[j] as number))).toBeLessThanOrEqual(1e-6));
  });
}

describe("llama.cpp shared prompt prefixes", () => {
  it("a GRPO group's four sessions start together: their prompt is evaluated once, and each samples what an engine without sharing samples", async () => {
    const shared = (await createEngine(spec("sequences=4&share=256"))) as LlamaCppEngine;
    const alone = (await createEngine(spec("sequences=4&share=0"))) as LlamaCppEngine;
    try {
      const prompt = promptOf(shared, "Compute 17 * 23 and write it to answer.txt.");
      expect(prompt.length).toBeGreaterThan(1800);
      const group = await Promise.all([1, 2, 3, 4].map((seed) => shared.generate({ promptTokens: prompt, params: params(seed) })));
      // One request evaluated the prompt and published it; the three others loaded it and evaluated its last token.
      expect(shared.promptTokens).toEqual({ evaluated: prompt.length + 3, reused: 0, shared: 3 * (prompt.length - 1) });
      expect(shared.sharedPrefixes.entries).toBe(1);
      expect(shared.sharedPrefixes.bytes).toBeGreaterThan(prompt.length * 1024);

      const reference = await Promise.all([1, 2, 3, 4].map((seed) => alone.generate({ promptTokens: prompt, params: params(seed) })));
      expect(alone.promptTokens).toEqual({ evaluated: 4 * prompt.length, reused: 0, shared: 0 });
      expect(alone.sharedPrefixes.entries).toBe(0);
      expectSameSamples(group, reference);
    } finally {
      await shared.close();
      await alone.close();
    }
  }, 120_000);

  it("two tasks behind one system prompt: the second session waits for the first's prefix and evaluates only its own task", async () => {
    const engine = (await createEngine(spec("sequences=2&share=256"))) as LlamaCppEngine;
    try {
      const a = promptOf(engine, "Compute 17 * 23 and write it to answer.txt.");
      const b = promptOf(engine, "List the files in input/ and count them.");
      const common = commonPrefix(a, b);
      expect(common).toBeGreaterThan(1800);
      const first = engine.generate({ promptTokens: a, params: params(1) });
      // The second arrives while the first is still evaluating (its prefix is pending, not yet published).
      await new Promise((r) => setImmediate(r));
      const second = engine.generate({ promptTokens: b, params: params(2) });
      const [ra, rb] = await Promise.all([first, second]);
      expect(ra.tokens.length).toBeGreaterThan(0);
      expect(rb.tokens.length).toBeGreaterThan(0);
      expect(engine.promptTokens).toEqual({ evaluated: a.length + (b.length - common), reused: 0, shared: common });

      // The same task's next turn finds its own sequence: the sequence's cache, not a shared prefix, serves it.
      const next = [...a, ...ra.tokens, ...engine.tokenizer.encode("<|im_end|>\n<|im_start|>user\nok<|im_end|>\n<|im_start|>assistant\n")];
      const before = { ...engine.promptTokens };
      await engine.generate({ promptTokens: next, params: params(3) });
      expect(engine.promptTokens.shared).toBe(before.shared);
      expect(engine.promptTokens.reused - before.reused).toBeGreaterThanOrEqual(a.length + ra.tokens.length - 1);
    } finally {
      await engine.close();
    }
  }, 120_000);

  it("a request aborted while it waits for a prefix returns at once; the publisher finishes", async () => {
    const engine = (await createEngine(spec("sequences=2&share=256"))) as LlamaCppEngine;
    try {
      const prompt = promptOf(engine, "Compute 17 * 23 and write it to answer.txt.");
      const first = engine.generate({ promptTokens: prompt, params: params(1) });
      await new Promise((r) => setImmediate(r));
      const controller = new AbortController();
      const waiting = engine.generate({ promptTokens: prompt, params: params(2), signal: controller.signal });
      controller.abort();
      const aborted = await waiting;
      expect(aborted.finishReason).toBe("abort");
      expect(aborted.tokens).toEqual([]);
      expect((await first).tokens.length).toBeGreaterThan(0);
      expect(engine.promptTokens.shared).toBe(0);
    } finally {
      await engine.close();
    }
  }, 120_000);

  it("states that exceed share_mb are not kept; one sequence or share=0 shares nothing; a new policy version starts empty; close leaves no files", async () => {
    const before = new Set(readdirSync(tmpdir()).filter((f) => f.startsWith("harnessrl-kv-")));
    const capped = (await createEngine(spec("sequences=2&share=256&share_mb=1"))) as LlamaCppEngine;
    const one = (await createEngine(spec("sequences=1&share=256"))) as LlamaCppEngine;
    const swapped = (await createEngine(spec("sequences=2&share=256"))) as LlamaCppEngine;
    try {
      const prompt = promptOf(capped, "Compute 17 * 23 and write it to answer.txt.");
      // ~2 MiB of F32 KV against a 1 MiB cap: written once (it could not be known before), deleted, never tried again.
      await Promise.all([1, 2].map((seed) => capped.generate({ promptTokens: prompt, params: params(seed) })));
      expect(capped.sharedPrefixes).toEqual({ entries: 0, bytes: 0 });
      const other = promptOf(capped, "List the files in input/ and count them.");
      await Promise.all([capped.generate({ promptTokens: other, params: params(3) }), capped.generate({ promptTokens: [...other].reverse(), params: params(4) })]);
      expect(capped.sharedPrefixes).toEqual({ entries: 0, bytes: 0 });

      await one.generate({ promptTokens: prompt, params: params(1) });
      expect(one.sharedPrefixes.entries).toBe(0);
      expect(one.promptTokens.shared).toBe(0);

      await swapped.generate({ promptTokens: prompt, params: params(1) });
      expect(swapped.sharedPrefixes.entries).toBe(1);
      await swapped.loadPolicy(dir2, 2);
      expect(swapped.sharedPrefixes.entries).toBe(0);
      // Version 1's KV must not serve version 2: its first request evaluates the prompt again and publishes it anew.
      await Promise.all([1, 2].map((seed) => swapped.generate({ promptTokens: prompt, params: params(seed) })));
      expect(swapped.promptTokens.shared).toBe(prompt.length - 1);
      expect(swapped.promptTokens.evaluated).toBe(2 * prompt.length + 1);
    } finally {
      await capped.close();
      await one.close();
      await swapped.close();
    }
    const after = readdirSync(tmpdir()).filter((f) => f.startsWith("harnessrl-kv-") && !before.has(f));
    expect(after).toEqual([]);
  }, 180_000);
});
