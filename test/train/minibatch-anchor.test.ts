import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PackedBatch } from "../../src/batch/types.js";
import { parseRunConfig } from "../../src/train/config.js";
import { trainOnRollouts } from "../../src/train/rl-step.js";
import type { ForwardBackwardOptions } from "../../src/trainer/types.js";
import { observeCalls } from "./observed-trainer.js";
import { openOracleFixture, type OracleFixture } from "./oracle-fixture.js";

interface Event {
  op: "logprobs" | "forwardBackward" | "optimStep";
  batch?: PackedBatch;
  options?: ForwardBackwardOptions;
  logprobs?: Float32Array[];
  gradNorm?: number | null;
}

/**
 * With several minibatches per RL step, minibatches after the first are trained after the policy has already moved.
 * Their PPO anchor must be the policy that sampled the batch (scored before any update), or the clip bounds nothing.
 * Real rollouts (oracle engine, bwrap, capture proxy) and the real torch worker; the trainer is observed, not replaced.
 */
describe("minibatches > 1: later minibatches are anchored to the pre-update policy", () => {
  let fx: OracleFixture;

  beforeAll(async () => {
    fx = await openOracleFixture({ suite: "calcrun:train?n=4&seed=5", harnesses: ["chat-agent", "resp-agent"], samples: 2, idPrefix: "anchor", otherScore: 0, trainerSeed: 3 });
  }, 300_000);

  afterAll(async () => {
    await fx?.close();
  });

  it("scores minibatch 2 before the first optimizer step and passes those logprobs as its proxLogprobs", async () => {
    const { stack, results, trainer } = fx;
    const events: Event[] = [];
    const observed = observeCalls(trainer, {
      logprobs: ([batch], out) => events.push({ op: "logprobs", batch, logprobs: out.logprobs }),
      forwardBackward: ([batch, options]) => events.push({ op: "forwardBackward", batch, ...(options ? { options } : {}) }),
      optimStep: (_args, out) => events.push({ op: "optimStep", gradNorm: out.gradNorm }),
    });
    const config = parseRunConfig({
      name: "anchor",
      model: { preset: "tiny-1m" },
      harnesses: ["chat-agent", "resp-agent"],
      tasks: { train: "calcrun:train" },
      algorithm: { lr: 0.05, minibatches: 2, batch_tokens: 1_000_000 },
      budget: { steps: 1, tasks_per_step: 4, samples: 2 },
    });
    const out = await trainOnRollouts(stack.store, results, observed, config, 0, { step: 1 });
    expect(out.metrics["train/minibatches"]).toBe(2);

    const ops = events.map((e) => e.op);
    expect(ops).toEqual(["logprobs", "forwardBackward", "optimStep", "forwardBackward", "optimStep"]);
    // The step's grad_norm is its largest minibatch norm, not the last one's; the first is logged on its own.
    const norms = events.filter((e) => e.op === "optimStep").map((e) => e.gradNorm as number);
    expect(norms[0]).not.toBe(norms[1]);
    expect(out.metrics.grad_norm).toBe(Math.max(...norms));
    expect(out.metrics["grad_norm/first"]).toBe(norms[0]);
    const [scored, first, , second] = events as [Event, Event, Event, Event];
    expect(first.options?.proxLogprobs).toBeUndefined();
    expect(second.batch).toBe(scored.batch);
    expect(second.options?.proxLogprobs).toBe(scored.logprobs);

    // The first update moved the policy, so the anchor differs from the policy the second minibatch is trained at.
    const after = await trainer.logprobs(scored.batch as PackedBatch, { temperature: 1, entropy: false });
    let moved = 0;
    scored.batch?.rows.forEach((row, r) => {
      for (let i = 0; i < row.tokens.length; i++) {
        if (row.trainable[i] !== 1) continue;
        moved = Math.max(moved, Math.abs((after.logprobs[r]?.[i] ?? 0) - (scored.logprobs?.[r]?.[i] ?? 0)));
      }
    });
    expect(moved).toBeGreaterThan(1e-3);
  }, 300_000);
});
