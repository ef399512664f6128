import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseRunConfig, type RunConfig } from "../../src/train/config.js";
import { optimizerResetFor, trainOnRollouts } from "../../src/train/rl-step.js";
import type { OptimStepOptions, OptimStepResult } from "../../src/trainer/types.js";
import { observeCalls } from "./observed-trainer.js";
import { openOracleFixture, type OracleFixture } from "./oracle-fixture.js";

function config(reset?: string, betas?: [number, number]): RunConfig {
  return parseRunConfig({
    name: "reset",
    model: { preset: "tiny-1m" },
    harnesses: ["chat-agent", "resp-agent"],
    tasks: { train: "calcrun:train" },
    algorithm: { lr: 1e-3, minibatches: 2, batch_tokens: 1_000_000, ...(reset ? { reset_optimizer: reset } : {}), ...(betas ? { betas } : {}) },
    budget: { steps: 3, tasks_per_step: 4, samples: 2 },
  });
}

describe("algorithm.reset_optimizer", () => {
  it("defaults to none, rejects other values, and applies to RL step 1 only", () => {
    expect(config().algorithm.reset_optimizer).toBe("none");
    expect(() => config("second_moment")).toThrow(/reset_optimizer/);
    expect(optimizerResetFor(config("first_moment"), 1)).toBe("first_moment");
    expect(optimizerResetFor(config("all"), 1)).toBe("all");
    expect(optimizerResetFor(config("first_moment"), 2)).toBeNull();
    // A direct caller that gives no step never resets.
    expect(optimizerResetFor(config("first_moment"), undefined)).toBeNull();
    expect(optimizerResetFor(config(), 1)).toBeNull();
  });

  it("algorithm.betas defaults to AdamW's 0.9 / 0.999 and takes two values in [0, 1)", () => {
    expect(config().algorithm.betas).toEqual([0.9, 0.999]);
    expect(config(undefined, [0, 0.99]).algorithm.betas).toEqual([0, 0.99]);
    expect(() => config(undefined, [1, 0.999])).toThrow(/betas/);
  });
});

/**
 * Real rollouts (oracle engine, bwrap, capture proxy) and the real torch worker: the config key reaches the worker's
 * optim_step on the first optimizer step of RL step 1 and nowhere else, and the worker reports what it reset. (What the
 * reset does to AdamW's moments is tested in worker/tests/test_optim_reset.py.)
 */
describe("reset_optimizer reaches the worker", () => {
  let fx: OracleFixture;

  beforeAll(async () => {
    fx = await openOracleFixture({ suite: "calcrun:train?n=4&seed=6", harnesses: ["chat-agent", "resp-agent"], samples: 2, idPrefix: "reset", otherScore: 0, trainerSeed: 4 });
  }, 300_000);

  afterAll(async () => {
    await fx?.close();
  });

  it("sends reset with step 1's first optimizer step; the worker resets every parameter's AdamW state", async () => {
    const { stack, results, trainer } = fx;
    const sent: OptimStepOptions[] = [];
    const replies: OptimStepResult[] = [];
    const observed = observeCalls(trainer, {
      optimStep: ([options], out) => {
        sent.push(options);
        replies.push(out);
      },
    });
    // An RL step past the first (as after a resume) only steps: the optimizer now holds state to reset.
    const later = await trainOnRollouts(stack.store, results, observed, config("first_moment"), 0, { step: 2 });
    expect(later.metrics["train/optimizer_reset_params"]).toBeUndefined();
    expect(sent.map((o) => o.reset)).toEqual([undefined, undefined]);

    const first = await trainOnRollouts(stack.store, results, observed, config("first_moment"), 0, { step: 1 });
    expect(sent.slice(2).map((o) => o.reset)).toEqual(["first_moment", undefined]);
    // tiny-1m (qwen3 layout, tied embeddings): embeddings + final norm + 4 layers × 11 tensors.
    expect(replies[2]?.resetParameters).toBe(46);
    expect(replies[3]?.resetParameters).toBeUndefined();
    expect(first.metrics["train/optimizer_reset_params"]).toBe(46);

    // Without the key, step 1 sends no reset.
    await trainOnRollouts(stack.store, results, observed, config(), 0, { step: 1 });
    expect(sent.slice(4).map((o) => o.reset)).toEqual([undefined, undefined]);
    // Every step sends the configured betas (the worker's AdamW takes them per step).
    expect(sent.slice(0, 6).map((o) => [o.beta1, o.beta2])).toEqual(Array(6).fill([0.9, 0.999]));
    await trainOnRollouts(stack.store, results, observed, config(undefined, [0, 0.99]), 0, { step: 3 });
    expect(sent.slice(6).map((o) => [o.beta1, o.beta2])).toEqual([
      [0, 0.99],
      [0, 0.99],
    ]);
  }, 300_000);
});
