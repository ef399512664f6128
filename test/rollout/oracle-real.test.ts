import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { qwen3Codec } from "../../src/bench/fidelity-model.js";
import { getHarness } from "../../src/harness/index.js";
import { REAL_HARNESS_SHELL_TOOLS } from "../../src/harness/real/index.js";
import type { CallRecord } from "../../src/icr/records.js";
import { RolloutStack } from "../../src/rollout/stack.js";
import { runRollouts } from "../../src/rollout/runner.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { loadSuite } from "../../src/tasks/registry.js";

/**
 * The oracle solves built-in family tasks through real CLIs, each step one call of the CLI's own shell tool, so warm
 * starts work through real harnesses as through the built-in ones. Pass/fail is the task verifier's.
 */
const HARNESSES = ["pi", "claude-code"];

describe("oracle engine through real harness CLIs in bwrap sandboxes", () => {
  let stack: RolloutStack;
  let results: RolloutResult[];
  let calls: CallRecord[];

  beforeAll(async () => {
    for (const h of HARNESSES) await getHarness(h).ensureInstalled();
    stack = await RolloutStack.open({ engine: "oracle", store: "memory", sandbox: "bwrap", sampling: { maxTokens: 256 } });
    const tasks = [...(await loadSuite("calcrun:test?n=2&seed=4")).tasks, ...(await loadSuite("files:test?n=1&seed=4")).tasks, ...(await loadSuite("lookup:test?n=1&seed=4")).tasks];
    results = await runRollouts(stack, { tasks, harnesses: HARNESSES, samples: 1, idPrefix: "oracle-real" }, { concurrency: 2, settings: { harnessTimeoutMs: 240_000, maxTurns: 12 } });
    calls = stack.store.listCalls({});
  }, 900_000);

  afterAll(async () => {
    await stack?.close();
  });

  it("every task passes its verifier through every real CLI", () => {
    expect(results).toHaveLength(4 * HARNESSES.length);
    for (const r of results) expect(r.score, `${r.harness}/${r.family}: ${r.status} ${r.error ?? ""} ${r.harnessDetail ?? ""}`).toBe(1);
  });

  it("the steps went through each CLI's own shell tool, and the CLI sent their results back", () => {
    for (const h of HARNESSES) {
      const own = calls.filter((c) => c.harness === h);
      const shell = REAL_HARNESS_SHELL_TOOLS[h]!;
      const steps = own.filter((c) => c.response?.toolCalls?.some((t) => t.name === shell.tool));
      expect(steps.length).toBeGreaterThanOrEqual(results.filter((r) => r.harness === h).length);
      // A later call of the same session extends the one that issued the step (its prompt carries the tool result).
      expect(own.filter((c) => c.parentCallId !== null && steps.some((s) => s.callId === c.parentCallId)).length).toBeGreaterThan(0);
    }
  });
});

/**
 * OpenClaw reads the Responses stream strictly: an output item whose identity changes between the stream and the
 * final response aborts the turn ("Responses stream changed output item identity"). With Qwen3's template a turn
 * without reasoning is sampled as an empty `<think></think>` block, which once went out as a reasoning item the final
 * response did not list. The oracle solves a task through OpenClaw's `exec` tool with the Qwen3 codec, once thinking
 * aloud (reasoning + tool call) and once without reasoning (empty think block + tool call).
 */
describe("oracle engine through OpenClaw with the Qwen3 codec (Responses stream)", () => {
  let stack: RolloutStack;
  const results: RolloutResult[] = [];
  let calls: CallRecord[];

  beforeAll(async () => {
    const openclaw = getHarness("openclaw");
    await openclaw.ensureInstalled();
    stack = await RolloutStack.open({ engine: "oracle", codec: qwen3Codec(), store: "memory", sandbox: "bwrap", sampling: { maxTokens: 256 } });
    const tasks = (await loadSuite("calcrun:test?n=1&seed=3")).tasks;
    const profile = openclaw.oracle!;
    for (const reasons of [true, false]) {
      profile.reasons = reasons;
      try {
        results.push(...(await runRollouts(stack, { tasks, harnesses: ["openclaw"], samples: 1, idPrefix: `oracle-qwen3-${reasons ? "think" : "blank"}` }, { concurrency: 1, settings: { harnessTimeoutMs: 300_000, maxTurns: 6 } })));
      } finally {
        profile.reasons = true;
      }
    }
    calls = stack.store.listCalls({});
  }, 900_000);

  afterAll(async () => {
    await stack?.close();
  });

  it("the task passes its verifier, with and without reasoning before the tool call", () => {
    expect(results).toHaveLength(2);
    for (const r of results) expect(r.score, `${r.rolloutId}: ${r.status} ${r.error ?? ""} ${r.harnessDetail ?? ""}`).toBe(1);
  });

  it("the steps were streamed Responses turns through OpenClaw's exec tool, with and without a reasoning item", () => {
    const steps = calls.filter((c) => c.protocol === "openai-responses" && c.stream && c.response?.toolCalls?.some((t) => t.name === "exec"));
    expect(steps.length).toBeGreaterThanOrEqual(2);
    const reasoningItems = (c: CallRecord): number => ((c.rawResponse as { output: { type: string }[] }).output).filter((o) => o.type === "reasoning").length;
    expect(steps.map((c) => (reasoningItems(c) > 0 ? "think" : "blank")).sort()).toEqual(["blank", "think"]);
  });
});
