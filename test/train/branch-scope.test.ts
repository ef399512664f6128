import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { branchPoints, parseAdvantageConfig, planGroups } from "../../src/advantage/index.js";
import type { RolloutStack } from "../../src/rollout/stack.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { recordsForRollouts } from "../../src/train/batches.js";
import { parseRunConfig } from "../../src/train/config.js";
import { advantagedBatch } from "../../src/train/rl-step.js";
import type { TorchTrainer } from "../../src/trainer/torch/torch-trainer.js";
import { openOracleFixture, type OracleFixture } from "./oracle-fixture.js";

/**
 * `advantage.negative_scope: branch` on real rollouts (oracle engine, chat-agent in bwrap sandboxes, capture proxy):
 * the group members' calls must meet on their exact recorded prompts, and a training step's batch must keep negative
 * advantages only where a worse rollout branched.
 */
describe("negative_scope branch on recorded chat-agent rollouts", () => {
  let fx: OracleFixture;
  let stack: RolloutStack;
  let results: RolloutResult[];
  let trainer: TorchTrainer;

  beforeAll(async () => {
    // Sample 0 of each task scores 1, the others 0: every group has a better rollout for its failures.
    fx = await openOracleFixture({ suite: "calcrun:train?n=2&seed=3", harnesses: ["chat-agent"], samples: 3, idPrefix: "branch", otherScore: 0, trainerSeed: 5 });
    ({ stack, results, trainer } = fx);
  }, 300_000);

  afterAll(async () => {
    await fx?.close();
  });

  const config = (scope: "all" | "branch") =>
    parseRunConfig({ name: "branch-scope", model: { preset: "tiny-1m" }, harnesses: ["chat-agent"], tasks: { train: "calcrun:train?n=2&seed=3" }, advantage: { negative_scale: 1, negative_scope: scope } });

  /** Sampled tokens per (rollout, sign of advantage) over the batch's rows. */
  function signs(built: Awaited<ReturnType<typeof advantagedBatch>>["built"]): { negative: number; positive: number } {
    let negative = 0;
    let positive = 0;
    built.batch.rows.forEach((row) => {
      for (let i = 0; i < row.tokens.length; i++) {
        if (row.trainable[i] !== 1) continue;
        if ((row.advantages[i] as number) < 0) negative++;
        else if ((row.advantages[i] as number) > 0) positive++;
      }
    });
    return { negative, positive };
  }

  it("failures that sampled the success's very calls have no branch: scope all trains their negatives, branch keeps none", async () => {
    const all = await advantagedBatch(stack.store, results, trainer, config("all"), 1);
    const branch = await advantagedBatch(stack.store, results, trainer, config("branch"), 1);
    expect(signs(all.built).negative).toBeGreaterThan(0);
    expect(signs(branch.built).negative).toBe(0);
    expect(signs(branch.built).positive).toBe(signs(all.built).positive);
    expect(branch.stats.branchTokens).toBe(0);
    expect(all.stats.branchTokens).toBeNull();
  });

  it("a failure whose first call sampled another token at offset 5 branches there: its siblings' recorded prompts are the same tokens", () => {
    const { records } = recordsForRollouts(stack.store, results);
    const plan = planGroups(results, parseAdvantageConfig({ negativeScope: "branch" }));
    const failing = results.find((r) => r.sample === 1);
    const first = records.find((c) => c.rolloutId === failing?.rolloutId);
    if (!first) throw new Error("no recorded call for the failing rollout");
    const changed = first.completionTokens.slice();
    changed[5] = (changed[5] as number) === 65 ? 66 : 65;
    const edited = records.map((c) => (c === first ? { ...c, completionTokens: changed } : c));
    expect(branchPoints(edited, plan)).toEqual(new Map([[first.callId, 5]]));
  });
});
