import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AdvantageConfigInput } from "../../src/advantage/index.js";
import { applyAdvantages, parseAdvantageConfig } from "../../src/advantage/index.js";
import type { BuiltBatch } from "../../src/batch/batch-index.js";
import { buildBatch } from "../../src/batch/build.js";
import { createTrainer } from "../../src/trainer/index.js";
import { requireCapability } from "../../src/trainer/capabilities.js";
import type { SketchTrainer } from "../../src/trainer/types.js";
import { buildForests } from "../../src/trees/forest.js";
import { branching, linear, result } from "./fixtures.js";

/** Deterministic critic values keyed by (call, offset), identical in every layout. */
function values(built: BuiltBatch): Float32Array[] {
  return built.batch.rows.map((row, r) => {
    const ix = built.index.rows[r];
    const out = new Float32Array(row.tokens.length);
    for (let i = 0; i < row.tokens.length; i++) {
      const call = built.index.calls[ix?.call[i] ?? -1]?.callId ?? "";
      out[i] = row.trainable[i] === 1 ? ((call.length * 7 + (ix?.offset[i] ?? 0) * 3) % 10) / 10 : 0;
    }
    return out;
  });
}

describe("advantages through the real PyTorch worker: the layout does not change the gradient", () => {
  let trainer: SketchTrainer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "hrl-adv-worker-"));
    trainer = requireCapability(await createTrainer("torch", { threads: 1 }), "grad_sketch", "this test");
    await trainer.init({ preset: "tiny-1m", seed: 3, out: join(dir, "model") });
  });
  afterAll(async () => {
    await trainer?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const records = [...branching("r1", 100), ...linear("r2", 150, [152, 153, 154]), ...branching("r3", 200)];
  const results = [result("r1", "t", "h", 1), result("r2", "t", "h", 0), result("r3", "t", "h", 0.25)];

  async function sketch(layout: "flat" | "tree", config: AdvantageConfigInput, naive = false): Promise<{ sketch: Float32Array; gradNorm: number }> {
    const built = buildBatch(buildForests(records), layout === "tree" ? { layout, tokenBudget: 64 } : { layout });
    applyAdvantages({ built, results, config: parseAdvantageConfig(config), values: values(built) });
    if (naive) {
      // Control: a per-copy token mean, as if every row's tokens were distinct.
      const copies = built.batch.rows.reduce((n, r) => n + r.trainable.reduce((a, b) => a + b, 0), 0);
      for (const row of built.batch.rows) row.trainable.forEach((t, i) => (row.lossWeights[i] = t / copies));
    }
    await trainer.zeroGrad();
    await trainer.forwardBackward(built.batch, { loss: { isMode: "none" } });
    return trainer.gradSketch({ dim: 512, seed: 1 });
  }

  it.each<[string, AdvantageConfigInput]>([
    ["GRPO token-mean", {}],
    ["GRPO sequence-mean", { aggregation: "sequence-mean" }],
    ["GRPO prompt-equal", { aggregation: "prompt-equal", normalizeStd: false }],
    ["PPO tree GAE", { estimator: "ppo", ppo: { gamma: 0.9, lambda: 0.8 } }],
  ])("%s: flat and tree-packed batches give the same gradient", async (_name, config) => {
    const flat = await sketch("flat", config);
    const tree = await sketch("tree", config);
    expect(flat.gradNorm).toBeGreaterThan(1e-6);
    expect(tree.gradNorm).toBeCloseTo(flat.gradNorm, 5);
    let diff = 0;
    let norm = 0;
    flat.sketch.forEach((v, i) => {
      diff = Math.max(diff, Math.abs(v - (tree.sketch[i] as number)));
      norm = Math.max(norm, Math.abs(v));
    });
    expect(diff / norm).toBeLessThan(1e-4);
  });

  it("control: a naive per-copy token mean over flat rows over-weights shared prefixes and changes the gradient", async () => {
    const tree = await sketch("tree", {});
    const naive = await sketch("flat", {}, true);
    expect(Math.abs(naive.gradNorm - tree.gradNorm) / tree.gradNorm).toBeGreaterThan(1e-3);
  });
});
