import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cosine } from "../../src/schedule/bandit-math.js";
import { parseRunConfig, type RunConfig } from "../../src/train/config.js";
import { probeSketch } from "../../src/train/probe-step.js";
import { trainOnRollouts } from "../../src/train/rl-step.js";
import type { TorchTrainer } from "../../src/trainer/torch/torch-trainer.js";
import { openOracleFixture, type OracleFixture } from "./oracle-fixture.js";

const config: RunConfig = parseRunConfig({
  name: "probe",
  model: { preset: "tiny-1m" },
  harnesses: ["chat-agent"],
  tasks: { train: "calcrun:train" },
  algorithm: { lr: 0.01 },
  budget: { steps: 1, tasks_per_step: 2, samples: 2 },
});
const SKETCH = { dim: 256, seed: 0 };

/**
 * A probe harness's step (src/train/probe-step.ts) with real rollouts (oracle through claw-agent, bwrap, capture proxy)
 * and the real torch worker: the sketch is the one a training step on the same rollouts would take, and the gradient
 * is gone afterwards — also when a call in between fails.
 */
describe("probeSketch: a training step's gradient, sketched and dropped", () => {
  let fx: OracleFixture;

  beforeAll(async () => {
    fx = await openOracleFixture({ suite: "calcrun:train?n=2&seed=6", harnesses: ["claw-agent"], samples: 2, idPrefix: "probe", otherScore: 0, trainerSeed: 5 });
  }, 300_000);

  afterAll(async () => {
    await fx?.close();
  });

  it("sketches the gradient a training step would take, applies nothing, and logs the probe", async () => {
    const { stack, results, trainer } = fx;
    const probe = await probeSketch(stack.store, "claw-agent", results, trainer, config, 0, { sketch: SKETCH });
    expect(probe.sketch).toHaveLength(SKETCH.dim);
    expect(probe.metrics).toMatchObject({ "probe/rollouts/claw-agent": 4, "probe/reward/claw-agent": 0.5, "probe/skipped/claw-agent": 0 });
    expect(probe.metrics["probe/grad_norm/claw-agent"]).toBeGreaterThan(0);
    expect(probe.metrics["probe/tokens/claw-agent"]).toBeGreaterThan(0);
    // Nothing was left to apply.
    expect((await trainer.optimStep({ lr: 0.05 })).skipped).toBe(true);
    // The same rollouts as a training batch, at the same weights: the training step's own sketch is the probe's.
    const trained = await trainOnRollouts(stack.store, results, trainer, config, 0, { sketch: SKETCH, step: 1 });
    expect(trained.metrics["tokens/trainable"]).toBe(probe.metrics["probe/tokens/claw-agent"]);
    expect(cosine(trained.sketch ?? [], probe.sketch ?? [])).toBeGreaterThan(0.9999);
  });

  it("has no gradient to sketch when every advantage is zero, and drops the gradient when a call fails", async () => {
    const { stack, results, trainer } = fx;
    const flat = await probeSketch(stack.store, "claw-agent", results.map((r) => ({ ...r, score: 1 })), trainer, config, 0, { sketch: SKETCH });
    expect(flat.sketch).toBeUndefined();
    expect(flat.metrics["probe/skipped/claw-agent"]).toBe(1);
    // gradSketch fails after forwardBackward has accumulated a gradient: probeSketch rejects, and the gradient is gone.
    const failing = new Proxy(trainer, {
      get(target, prop, receiver) {
        if (prop === "gradSketch") return () => Promise.reject(new Error("sketch failed"));
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as TorchTrainer;
    await expect(probeSketch(stack.store, "claw-agent", results, failing, config, 0, { sketch: SKETCH })).rejects.toThrow(/sketch failed/);
    expect((await trainer.optimStep({ lr: 0.05 })).skipped).toBe(true);
  });
});
