import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseRunConfig } from "../../src/train/config.js";
import { trainOnRollouts } from "../../src/train/rl-step.js";
import { coreOnly } from "../trainer/core-only.js";
import { observeCalls } from "./observed-trainer.js";
import { openOracleFixture, type OracleFixture } from "./oracle-fixture.js";

/**
 * The RL step uses the critic, CAPO and sketch capabilities only through the narrowed trainer: with real rollouts and
 * the real torch worker, a PPO + CAPO step trains the critic and routes CAPO gradients; a core-only backend is refused
 * before any work.
 */
describe("an RL step that needs trainer capabilities", () => {
  let fx: OracleFixture;
  const raw = {
    name: "capability-step",
    model: { preset: "tiny-1m" },
    harnesses: ["chat-agent"],
    tasks: { train: "calcrun:train" },
    advantage: { estimator: "ppo" },
    algorithm: { lr: 0.01, batch_tokens: 1_000_000 },
    capo: { enabled: true, top_fraction: 0.25 },
    budget: { steps: 1, tasks_per_step: 2, samples: 2 },
  };
  const config = parseRunConfig(raw);

  beforeAll(async () => {
    fx = await openOracleFixture({ suite: "calcrun:train?n=2&seed=7", harnesses: ["chat-agent"], samples: 2, idPrefix: "capstep", otherScore: 0, trainerSeed: 4 });
  }, 300_000);

  afterAll(async () => {
    await fx?.close();
  });

  it("is refused on a core-only backend, naming the setting", async () => {
    const err = await trainOnRollouts(fx.stack.store, fx.results, coreOnly(fx.trainer), config, 0, { capo: { probe: true, hasPartitions: false } }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "unsupported_trainer_capability", details: { capability: "critic" } });
  });

  it("trains the critic and routes CAPO gradients on the torch trainer", async () => {
    await fx.trainer.criticInit({ fromPolicy: true });
    const out = await trainOnRollouts(fx.stack.store, fx.results, fx.trainer, config, 0, { capo: { probe: true, hasPartitions: false }, sketch: { dim: 32, seed: 0 } });
    expect(out.metrics["capo/probed"]).toBe(1);
    expect(out.metrics["capo/active"]).toBe(1);
    expect(out.metrics["capo/grad_cosine"]).toBeGreaterThanOrEqual(-1);
    expect(out.metrics["critic/value_loss"]).toBeGreaterThan(0);
    expect(out.metrics["train/skipped"]).toBe(0);
    expect(out.sketch).toHaveLength(32);
  });

  it("clips the critic by its own norm when critic_max_grad_norm is set, and reports the critic's gradient norm", async () => {
    const clipped = parseRunConfig({ ...raw, algorithm: { lr: 0.01, batch_tokens: 1_000_000, max_grad_norm: 0.05, critic_max_grad_norm: 0.5 }, capo: { enabled: false } });
    const clips: Record<string, number | undefined> = {};
    // The real torch trainer, with its two optimizer steps' options noted on the way through.
    const trainer = observeCalls(fx.trainer, {
      optimStep: ([options]) => (clips["optimStep"] = options.maxGradNorm),
      criticOptimStep: ([options]) => (clips["criticOptimStep"] = options.maxGradNorm),
    });
    const out = await trainOnRollouts(fx.stack.store, fx.results, trainer, clipped, 0);
    expect(clips).toEqual({ optimStep: 0.05, criticOptimStep: 0.5 });
    expect(out.metrics["critic/grad_norm"]).toBeGreaterThan(0);
  });
});
