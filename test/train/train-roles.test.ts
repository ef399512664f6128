import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyAdvantages, parseAdvantageConfig } from "../../src/advantage/index.js";
import type { BuiltBatch } from "../../src/batch/batch-index.js";
import type { PackedBatch } from "../../src/batch/types.js";
import type { RolloutStack } from "../../src/rollout/stack.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { batchForRollouts } from "../../src/train/batches.js";
import { parseRunConfig } from "../../src/train/config.js";
import { advantagedBatch, trainOnRollouts } from "../../src/train/rl-step.js";
import { untrainedRoleFilter } from "../../src/train/train-roles.js";
import type { TorchTrainer } from "../../src/trainer/torch/torch-trainer.js";
import { openOracleFixture, type OracleFixture } from "./oracle-fixture.js";

const SUB_ROLES = new Set(["researcher", "worker"]);
const SKETCH = { dim: 4096, seed: 7 };

interface SampledToken {
  row: number;
  index: number;
  role: string;
}

/**
 * Multi-agent training through the central-agent harness: `train_roles: [central]` must leave every token a sub-agent
 * sampled out of the gradient (the sub-agents still answer from the same engine), while joint training trains them.
 * The rollouts are real (oracle engine, bwrap sandboxes, capture proxy); the gradients come from the real torch worker.
 */
describe("central-only vs joint training on central-agent rollouts", () => {
  let fx: OracleFixture;
  let stack: RolloutStack;
  let results: RolloutResult[];
  let trainer: TorchTrainer;

  beforeAll(async () => {
    // The oracle solves every task; rewards that differ within each group give non-zero GRPO advantages.
    fx = await openOracleFixture({ suite: "lookup:train?n=2&seed=3", harnesses: ["central-agent"], samples: 2, idPrefix: "roles", otherScore: 0.25, trainerSeed: 4 });
    ({ stack, results, trainer } = fx);
  }, 300_000);

  afterAll(async () => {
    await fx?.close();
  });

  /** The batch with advantages applied, training only `trainRoles` (every role when undefined). */
  function prepared(trainRoles: string[] | undefined): { built: BuiltBatch; tokens: SampledToken[]; filtered: number } {
    const built = batchForRollouts(stack.store, results);
    const filter = untrainedRoleFilter(
      stack.store,
      results.map((r) => r.rolloutId),
      trainRoles,
    );
    const { stats } = applyAdvantages({ built, results, config: parseAdvantageConfig({ estimator: "grpo" }), ...(filter ? { excludeCall: filter } : {}) });
    const roleOf = new Map(results.flatMap((r) => stack.store.listCalls({ rolloutId: r.rolloutId })).map((c) => [c.callId, c.agentRole ?? "main"]));
    const tokens: SampledToken[] = [];
    built.index.rows.forEach((ix, row) => {
      for (let i = 0; i < ix.call.length; i++) {
        if ((ix.offset[i] as number) < 0) continue; // context, not sampled by the call
        const call = built.index.calls[ix.call[i] as number];
        tokens.push({ row, index: i, role: roleOf.get(call?.callId ?? "") ?? "?" });
      }
    });
    return { built, tokens, filtered: stats.filteredTokens };
  }

  async function sketchOf(batch: PackedBatch): Promise<{ sketch: number[]; gradNorm: number }> {
    await trainer.zeroGrad();
    await trainer.forwardBackward(batch, { objective: "pg", temperature: 1 });
    const { sketch, gradNorm } = await trainer.gradSketch(SKETCH);
    await trainer.zeroGrad();
    return { sketch: Array.from(sketch), gradNorm };
  }

  /** A copy of the batch whose given tokens carry other advantages and old logprobs. */
  function perturbed(batch: PackedBatch, tokens: readonly SampledToken[]): PackedBatch {
    const rows = batch.rows.map((r) => ({ ...r, advantages: r.advantages.slice(), oldLogprobs: r.oldLogprobs.slice() }));
    tokens.forEach((t, k) => {
      const row = rows[t.row]!;
      row.advantages[t.index] = (row.advantages[t.index] as number) * -3 + (k % 2 ? 2 : -2);
      row.oldLogprobs[t.index] = (row.oldLogprobs[t.index] as number) - 0.5 - (k % 5) * 0.1;
    });
    return { ...batch, rows };
  }

  it("runs central agents that delegate to sub-agents, all recorded with their roles", () => {
    expect(results).toHaveLength(4);
    expect(results.every((r) => r.status === "ok")).toBe(true);
    const { tokens } = prepared(["central"]);
    expect(tokens.some((t) => t.role === "central")).toBe(true);
    expect(tokens.some((t) => SUB_ROLES.has(t.role))).toBe(true);
    expect(tokens.every((t) => t.role === "central" || SUB_ROLES.has(t.role))).toBe(true);
  });

  it("central-only: every sub-agent token has loss weight 0 and advantage 0; central tokens are trained", () => {
    const { built, tokens, filtered } = prepared(["central"]);
    const sub = tokens.filter((t) => SUB_ROLES.has(t.role));
    const central = tokens.filter((t) => t.role === "central");
    for (const t of sub) {
      const row = built.batch.rows[t.row]!;
      expect([row.lossWeights[t.index], row.advantages[t.index]]).toEqual([0, 0]);
    }
    expect(filtered).toBeGreaterThan(0);
    expect(central.every((t) => (built.batch.rows[t.row]!.lossWeights[t.index] as number) > 0)).toBe(true);
    expect(central.every((t) => built.batch.rows[t.row]!.advantages[t.index] !== 0)).toBe(true);
  });

  it("joint: sub-agent tokens are trained too", () => {
    const { built, tokens, filtered } = prepared(undefined);
    expect(filtered).toBe(0);
    const sub = tokens.filter((t) => SUB_ROLES.has(t.role));
    expect(sub.length).toBeGreaterThan(0);
    expect(sub.every((t) => (built.batch.rows[t.row]!.lossWeights[t.index] as number) > 0 && built.batch.rows[t.row]!.advantages[t.index] !== 0)).toBe(true);
  });

  it("central-only: the gradient ignores sub-agent tokens and follows central ones", async () => {
    const { built, tokens } = prepared(["central"]);
    const sub = tokens.filter((t) => SUB_ROLES.has(t.role));
    const central = tokens.filter((t) => t.role === "central");
    const base = await sketchOf(built.batch);
    expect(base.gradNorm).toBeGreaterThan(0);
    const subChanged = await sketchOf(perturbed(built.batch, sub));
    expect(subChanged.gradNorm).toBe(base.gradNorm);
    expect(subChanged.sketch).toEqual(base.sketch);
    // The same comparison notices a change to a single central token.
    const centralChanged = await sketchOf(perturbed(built.batch, central.slice(0, 1)));
    expect(centralChanged.sketch).not.toEqual(base.sketch);
  }, 120_000);

  it("joint: changing sub-agent tokens' advantages changes the gradient", async () => {
    const { built, tokens } = prepared(undefined);
    const sub = tokens.filter((t) => SUB_ROLES.has(t.role));
    const base = await sketchOf(built.batch);
    const subChanged = await sketchOf(perturbed(built.batch, sub));
    expect(subChanged.sketch).not.toEqual(base.sketch);
  }, 120_000);

  it("`algorithm.trajectories: main` leaves the sub-agents' calls out of the RL step's batch; `all` keeps them", async () => {
    const config = (trajectories: "all" | "main") =>
      parseRunConfig({ name: "roles", model: { preset: "tiny-1m" }, harnesses: ["central-agent"], tasks: { train: "lookup:train" }, budget: { steps: 1, tasks_per_step: 2, samples: 2 }, algorithm: { trajectories } });
    expect(parseRunConfig({ name: "d", model: { preset: "tiny-1m" }, harnesses: ["central-agent"], tasks: { train: "lookup:train" } }).algorithm.trajectories).toBe("all");
    const roleOf = new Map(results.flatMap((r) => stack.store.listCalls({ rolloutId: r.rolloutId })).map((c) => [c.callId, c.agentRole ?? "main"]));
    const rolesIn = (built: BuiltBatch): Set<string> => new Set(built.index.calls.map((c) => roleOf.get(c.callId) ?? "?"));
    const main = await advantagedBatch(stack.store, results, trainer, config("main"), 0);
    const all = await advantagedBatch(stack.store, results, trainer, config("all"), 0);
    expect([...rolesIn(main.built)]).toEqual(["central"]);
    expect([...rolesIn(all.built)].sort()).toEqual(["central", ...SUB_ROLES].sort());
    const subCalls = all.built.index.calls.filter((c) => SUB_ROLES.has(roleOf.get(c.callId) ?? "")).length;
    expect(main.built.stats.filter.auxiliaryCalls).toBe(subCalls);
    expect(main.built.stats.flatTokens).toBeLessThan(all.built.stats.flatTokens);
  }, 120_000);

  // Last: it takes optimizer steps.
  it("the RL step applies the same role filter from the run config", async () => {
    const config = (trainRoles: string[] | undefined) =>
      parseRunConfig({ name: "roles", model: { preset: "tiny-1m" }, harnesses: ["central-agent"], tasks: { train: "lookup:train" }, budget: { steps: 1, tasks_per_step: 2, samples: 2 }, ...(trainRoles ? { train_roles: trainRoles } : {}) });
    const centralOnly = await trainOnRollouts(stack.store, results, trainer, config(["central"]), 0);
    expect(centralOnly.metrics["adv/filtered_tokens"]).toBe(prepared(["central"]).filtered);
    expect(centralOnly.metrics["adv/filtered_tokens"]).toBeGreaterThan(0);
    const joint = await trainOnRollouts(stack.store, results, trainer, config(undefined), 0);
    expect(joint.metrics["adv/filtered_tokens"]).toBe(0);
    expect(joint.metrics["adv/trainable_tokens"]).toBe((centralOnly.metrics["adv/trainable_tokens"] as number) + (centralOnly.metrics["adv/filtered_tokens"] as number));
  }, 120_000);
});
