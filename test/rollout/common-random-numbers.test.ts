import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RolloutStack } from "../../src/rollout/stack.js";
import { runRollouts, type RolloutPlan } from "../../src/rollout/runner.js";
import { loadSuite } from "../../src/tasks/registry.js";
import { initTinyPolicy } from "../train/served-policy.js";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();

/**
 * Common random numbers end to end: llama.cpp serving an untrained model (near-uniform tokens, so every sampled
 * token depends on the random numbers), the built-in harnesses in bwrap sandboxes. Two evaluations of a plan with
 * the same `samplingSeeds` key sample exactly the same tokens in every call of every rollout; a third with another
 * key, and one without a key, sample others.
 */
describe("evaluations with common random numbers through llama.cpp and real harnesses", () => {
  let stack: RolloutStack;
  /** Per plan run: rollout (task/harness/sample) → the completion tokens of its calls, in order. */
  const runs: Map<string, number[][]>[] = [];

  beforeAll(async () => {
    const dir = join(tempDir("hrl-crn-"), "model");
    await initTinyPolicy(dir, 7);
    stack = await RolloutStack.open({ engine: `llamacpp:${dir}?threads=1&sequences=4`, store: "memory", sandbox: "bwrap", sampling: { temperature: 1, maxTokens: 32 } });
    const tasks = (await loadSuite("calcrun:test?n=3&seed=3")).tasks;
    const plans: { label: string; samplingSeeds?: string }[] = [{ label: "a", samplingSeeds: "eval-seed-0" }, { label: "b", samplingSeeds: "eval-seed-0" }, { label: "c", samplingSeeds: "eval-seed-1" }, { label: "d" }];
    for (const { label, samplingSeeds } of plans) {
      const plan: RolloutPlan = { tasks, harnesses: ["chat-agent", "resp-agent"], samples: 1, idPrefix: label, ...(samplingSeeds ? { samplingSeeds } : {}) };
      const results = await runRollouts(stack, plan, { concurrency: 4, settings: { maxTurns: 2, maxTokens: 32 } });
      const byRollout = new Map<string, number[][]>();
      for (const r of results) byRollout.set(`${r.taskId}/${r.harness}/${r.sample}`, stack.store.listCalls({ rolloutId: r.rolloutId }).map((c) => c.completionTokens));
      runs.push(byRollout);
    }
  }, 600_000);

  afterAll(async () => {
    await stack?.close();
  });

  it("samples the same tokens in every call when two evaluations share the key", () => {
    const [a, b] = runs;
    expect(a?.size).toBe(6);
    for (const [key, calls] of a!) {
      expect(calls.length).toBeGreaterThanOrEqual(1);
      expect(calls.every((t) => t.length > 0)).toBe(true);
      expect(b!.get(key)).toEqual(calls);
    }
  });

  it("samples other tokens with another key or without one", () => {
    const [a, , c, d] = runs;
    for (const other of [c!, d!]) {
      const firstCallsEqual = [...a!].filter(([key, calls]) => JSON.stringify(other.get(key)?.[0]) === JSON.stringify(calls[0])).length;
      // Near-uniform tokens over 32 draws: two independent streams agree on a whole first completion essentially never.
      expect(firstCallsEqual).toBe(0);
    }
  });
});
