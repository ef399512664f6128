import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import { DEFAULT_SAMPLING, type SamplingEngine } from "../../src/engine/types.js";
import { writeRandomModelDir } from "../../src/weights/random-model.js";

/**
 * `sampling.top_k` on llama.cpp: the engine reports each token's probability under the distribution it was drawn from,
 * the top K renormalised. Checked without a model of the answer: at one prompt, first tokens are drawn many times from
 * the whole distribution and from the top K; a token seen in both has p_K(t) / p(t) = 1 / (mass of the top K), the
 * same for every token; no more than K distinct tokens are drawn; and the top-K tokens' full probabilities sum to that
 * mass. A low temperature sharpens the random model so that the top tokens carry most of the mass and both arms see them.
 */
const K = 4;
// At 0.2 the top 4 of this model hold ~67 % of the first token's mass (measured), so both arms see several of them.
const TEMPERATURE = 0.2;
const DRAWS = 160;

describe("llama.cpp sampling from the top K tokens", () => {
  let root: string;
  let engine: SamplingEngine;
  let prompt: number[];

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "harnessrl-top-k-"));
    const dir = join(root, "model");
    writeRandomModelDir(dir, { modelType: "qwen3", hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 128, tieWordEmbeddings: true, seed: 11 });
    engine = await createEngine(`llamacpp:${dir}?threads=1&sequences=4&cache=${join(root, "cache")}`);
    prompt = engine.tokenizer.encode(engine.renderer.render([{ role: "user", content: "Add 12 and 30." }], [], { addGenerationPrompt: true }));
  }, 120_000);

  afterAll(async () => {
    await engine?.close();
    rmSync(root, { recursive: true, force: true });
  });

  /** The first token's id → its reported probability, over `DRAWS` seeded draws. */
  async function firstTokens(topK: number): Promise<Map<number, number>> {
    const seen = new Map<number, number>();
    for (let k = 0; k < DRAWS; k += 4) {
      const batch = await Promise.all(
        [0, 1, 2, 3].map((j) => engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, temperature: TEMPERATURE, topK, maxTokens: 1, seed: 500 + k + j } })),
      );
      for (const r of batch) {
        const [t] = r.tokens;
        const [lp] = r.logprobs;
        if (t === undefined || lp === undefined) continue;
        const p = Math.exp(lp);
        // The same token at the same prompt is reported with the same probability every time.
        if (seen.has(t)) expect(Math.abs((seen.get(t) ?? 0) - p)).toBeLessThan(1e-5);
        seen.set(t, p);
      }
    }
    return seen;
  }

  it("reports probabilities renormalised over the top K, and draws nothing else", async () => {
    const full = await firstTokens(0);
    const top = await firstTokens(K);
    expect(top.size).toBeGreaterThan(1);
    expect(top.size).toBeLessThanOrEqual(K);
    const both = [...top.keys()].filter((t) => full.has(t));
    expect(both.length).toBeGreaterThanOrEqual(2);
    const ratios = both.map((t) => (top.get(t) ?? 0) / (full.get(t) ?? 1));
    const mass = 1 / (ratios[0] ?? 1);
    // Some mass lies outside the top K (else this test would not tell truncation from its absence).
    expect(mass).toBeLessThan(0.999);
    for (const r of ratios) expect(Math.abs(r * mass - 1)).toBeLessThan(1e-3);
    // Where every top-K token was also drawn from the whole distribution, their probabilities add up to that mass.
    if (top.size === K && both.length === K) expect(Math.abs(both.reduce((s, t) => s + (full.get(t) ?? 0), 0) - mass)).toBeLessThan(1e-3);
    // The full distribution's draws that are not in the top K are less likely than every top-K token.
    const least = Math.min(...[...top.keys()].map((t) => full.get(t) ?? Infinity));
    for (const [t, p] of full) if (!top.has(t) && both.length === top.size) expect(p).toBeLessThanOrEqual(least + 1e-6);
  }, 300_000);
});
