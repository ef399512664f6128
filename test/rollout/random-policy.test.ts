import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { summarise } from "../../src/eval/metrics.js";
import { RolloutStack } from "../../src/rollout/stack.js";
import { runRollouts } from "../../src/rollout/runner.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { loadSuite } from "../../src/tasks/registry.js";
import { initTinyPolicy } from "../train/served-policy.js";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();

/**
 * The floor of every family: an untrained model (random weights, so near-uniform tokens) served by llama.cpp through
 * the built-in harnesses must score ~0 — verifiers reward solving the task, not producing output.
 */
describe("a random-token policy through the built-in harnesses", () => {
  let stack: RolloutStack;
  let results: RolloutResult[];

  beforeAll(async () => {
    const dir = join(tempDir("hrl-random-"), "model");
    await initTinyPolicy(dir, 5);
    stack = await RolloutStack.open({ engine: `llamacpp:${dir}?threads=1&sequences=8`, store: "memory", sandbox: "bwrap", sampling: { temperature: 1, maxTokens: 48 } });
    const tasks = (await loadSuite("mix:test?n=6&seed=4")).tasks;
    results = await runRollouts(stack, { tasks, harnesses: ["chat-agent", "claw-agent", "resp-agent", "central-agent"], samples: 1, idPrefix: "random" }, { concurrency: 6, settings: { maxTurns: 3, maxTokens: 48 } });
  }, 600_000);

  afterAll(async () => {
    await stack?.close();
  });

  it("scores ~0 on every family, with the harnesses really talking to the model", () => {
    expect(results).toHaveLength(24);
    expect(results.filter((r) => r.status === "infra_error")).toEqual([]);
    expect(results.every((r) => r.calls >= 1)).toBe(true);
    const s = summarise(results, 1);
    for (const family of ["arith", "files", "lookup"]) expect(s.byFamily[family]?.meanScore ?? 1).toBeLessThan(0.05);
    expect(s.overall.passAt1).toBe(0);
  });
});
