import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
