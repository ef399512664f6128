import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PackedBatch } from "../../src/batch/types.js";
import { cosine } from "../../src/schedule/bandit-math.js";
import { banditConfig, createScheduler } from "../../src/schedule/index.js";
import { createTrainer } from "../../src/trainer/index.js";
import { requireCapability } from "../../src/trainer/capabilities.js";
import type { SketchTrainer } from "../../src/trainer/types.js";
import { batch, flatRow, tokensFrom } from "../trainer/fixtures.js";

/**
 * The transferability signal with the real worker: gradient sketches (count sketch, `grad_sketch`) of policy-gradient
 * steps on a tiny model. The true gradient cosine comes from the worker's exact float64 gradient norms and the
 * polarisation identity: ⟨a, b⟩ = (‖a + b‖² − ‖a‖² − ‖b‖²) / 2, where a + b is obtained by accumulating both batches'
 * gradients before one `gradSketch` (gradients add across forwardBackward calls).
 */
function pgBatch(seeds: number[], advantage: (row: number) => number): PackedBatch {
  const rows = seeds.map((seed, k) => {
    const row = flatRow([257, ...tokensFrom(seed, 40)]);
    for (let i = 11; i < row.tokens.length; i++) {
      row.trainable[i] = 1;
      row.advantages[i] = advantage(k);
      row.lossWeights[i] = 1 / (30 * seeds.length);
    }
    return row;
  });
  return batch(rows);
}

describe("gradient sketches on a tiny model (real torch worker)", () => {
  let trainer: SketchTrainer;
  let dir: string;
  const DIM = 4096;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "harnessrl-sketch-"));
    trainer = requireCapability(await createTrainer("torch", { threads: 1 }), "grad_sketch", "this test");
    await trainer.init({ preset: "tiny-1m", seed: 3, out: join(dir, "m") });
  });

  afterAll(async () => {
    await trainer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function sketchOf(batches: PackedBatch[], seed = 1, dim = DIM): Promise<{ sketch: Float32Array; gradNorm: number }> {
    await trainer.zeroGrad();
    for (const b of batches) await trainer.forwardBackward(b, { loss: { isMode: "none" } });
    const out = await trainer.gradSketch({ dim, seed });
    await trainer.zeroGrad();
    return out;
  }

  async function trueCosine(a: PackedBatch, b: PackedBatch): Promise<number> {
    const na = (await sketchOf([a])).gradNorm;
    const nb = (await sketchOf([b])).gradNorm;
    const nab = (await sketchOf([a, b])).gradNorm;
    return (nab * nab - na * na - nb * nb) / (2 * na * nb);
  }

  it("is deterministic for a seed, another seed is another projection, and it is linear", async () => {
    const a = pgBatch([10, 11], () => 1);
    const b = pgBatch([20, 21], (k) => (k === 0 ? 1 : -0.5));
    const s1 = await sketchOf([a]);
    const s2 = await sketchOf([a]);
    expect(s1.sketch).toHaveLength(DIM);
    expect(Array.from(s2.sketch)).toEqual(Array.from(s1.sketch));
    expect(s2.gradNorm).toBe(s1.gradNorm);
    const other = await sketchOf([a], 2);
    expect(Math.abs(cosine(other.sketch, s1.sketch))).toBeLessThan(0.2);
    // Linear: sketch(a + b) = sketch(a) + sketch(b) up to float32 rounding.
    const sb = await sketchOf([b]);
    const sab = await sketchOf([a, b]);
    let maxErr = 0;
    let scale = 0;
    for (let i = 0; i < DIM; i++) {
      maxErr = Math.max(maxErr, Math.abs((sab.sketch[i] ?? 0) - (s1.sketch[i] ?? 0) - (sb.sketch[i] ?? 0)));
      scale = Math.max(scale, Math.abs(sab.sketch[i] ?? 0));
    }
    expect(maxErr).toBeLessThan(1e-4 * scale);
  });

  it("tracks the true gradient cosine at dim 4096 across related, unrelated and opposed batches", async () => {
    const base = pgBatch([30, 31, 32], () => 1);
    const cases: [string, PackedBatch][] = [
      ["same rows, scaled advantages", pgBatch([30, 31, 32], () => 2)],
      ["two of three rows shared", pgBatch([30, 31, 40], () => 1)],
      ["different rows", pgBatch([50, 51, 52], () => 1)],
      ["same rows, one advantage flipped", pgBatch([30, 31, 32], (k) => (k === 2 ? -1 : 1))],
      ["same rows, opposed", pgBatch([30, 31, 32], () => -1)],
    ];
    const sBase = (await sketchOf([base])).sketch;
    const rows: { name: string; truth: number; sketched: number }[] = [];
    for (const [name, other] of cases) {
      const truth = await trueCosine(base, other);
      const sketched = cosine(sBase, (await sketchOf([other])).sketch);
      rows.push({ name, truth, sketched });
    }
    const byName = new Map(rows.map((r) => [r.name, r]));
    // The cases span the range, so agreement is not an accident of one value.
    expect(byName.get("same rows, scaled advantages")!.truth).toBeCloseTo(1, 4);
    expect(byName.get("same rows, opposed")!.truth).toBeCloseTo(-1, 4);
    expect(byName.get("different rows")!.truth).toBeLessThan(0.8);
    // A count sketch's cosine error has σ ≈ sqrt((1 + cos²) / dim) ≈ 0.016–0.022 at dim 4096; 0.08 is ≈ 4σ.
    // Measured (seed 3, sketch seed 1): |Δ| = 0.000, 0.001, 0.039, 0.006, 0.000.
    for (const r of rows) expect(Math.abs(r.sketched - r.truth), `${r.name}: sketch ${r.sketched} vs true ${r.truth}`).toBeLessThan(0.08);
  });

  it("drives HarnessBandit with real sketches: the harness whose gradient opposes the others' loses transferability", async () => {
    // "claude" and "codex" push the same rows up; "contrarian" pushes them down. Equal learnability, so τ decides.
    const batches: Record<string, PackedBatch> = {
      claude: pgBatch([60, 61, 62], () => 1),
      codex: pgBatch([60, 61, 63], () => 1),
      contrarian: pgBatch([60, 61, 62], () => -1),
    };
    const scheduler = createScheduler(banditConfig({ sketch_dim: 1024, learn_weight: 0, bonus: 0, temperature: 0.1, p_min: 0.1 }), Object.keys(batches), 4);
    const options = scheduler.sketchOptions;
    expect(options).toEqual({ dim: 1024, seed: 0 });
    let saved = "";
    const picks: string[] = [];
    for (let step = 0; step < 12; step++) {
      const { harness } = scheduler.next(step);
      picks.push(harness);
      await trainer.forwardBackward(batches[harness]!, { loss: { isMode: "none" } });
      const { sketch } = await trainer.gradSketch(options!);
      await trainer.optimStep({ lr: 1e-4 });
      scheduler.update({ harness, learnability: 1, sketch });
      if (step === 5) saved = JSON.stringify(scheduler.state());
    }
    const log = scheduler.log();
    expect(new Set(picks).size).toBe(3);
    expect(log["bandit/transfer/contrarian"]).toBeLessThan(-0.3);
    expect(log["bandit/score/contrarian"]).toBeLessThan(Math.min(log["bandit/score/claude"] ?? 0, log["bandit/score/codex"] ?? 0));
    expect(log["bandit/prob/contrarian"]).toBeLessThan(Math.max(log["bandit/prob/claude"] ?? 0, log["bandit/prob/codex"] ?? 0));
    // The state taken mid-run (real float32 sketches inside) restores to the same record.
    const resumed = createScheduler(banditConfig({ sketch_dim: 1024, learn_weight: 0, bonus: 0, temperature: 0.1, p_min: 0.1 }), Object.keys(batches), 0);
    resumed.restore(JSON.parse(saved));
    expect(JSON.stringify(resumed.state())).toBe(saved);
  });

  it("drops a probe's gradient: forwardBackward, gradSketch, zeroGrad leave nothing for the next optimizer step", async () => {
    // What the orchestrator does with a probe harness's batch (src/train/probe-step.ts): sketch, then zeroGrad.
    const probe = pgBatch([70, 71], () => 1);
    const train = pgBatch([80, 81], () => 1);
    const scoring = { temperature: 1, entropy: false, trainableOnly: true };
    const before = (await trainer.logprobs(train, scoring)).logprobs;
    await trainer.forwardBackward(probe, { loss: { isMode: "none" } });
    expect((await trainer.gradSketch({ dim: 64, seed: 0 })).gradNorm).toBeGreaterThan(0);
    await trainer.zeroGrad();
    // No gradient is left: the step is skipped and the policy is exactly as it was.
    const step = await trainer.optimStep({ lr: 0.05 });
    expect(step.skipped).toBe(true);
    expect((await trainer.logprobs(train, scoring)).logprobs.map((r) => Array.from(r))).toEqual(before.map((r) => Array.from(r)));
    // And a training step after the probe's sketch trains on its own gradient only: its sketch equals a clean one.
    await trainer.forwardBackward(probe, { loss: { isMode: "none" } });
    await trainer.gradSketch({ dim: 64, seed: 0 });
    await trainer.zeroGrad();
    await trainer.forwardBackward(train, { loss: { isMode: "none" } });
    const afterProbe = (await trainer.gradSketch({ dim: 64, seed: 0 })).sketch;
    expect(Array.from(afterProbe)).toEqual(Array.from((await sketchOf([train], 0, 64)).sketch));
  });
});
