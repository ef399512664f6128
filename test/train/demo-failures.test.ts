import { describe, expect, it } from "vitest";
import { unsolvedDemosLine } from "../../src/train/demo-failures.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { result as fixtureResult } from "../advantage/fixtures.js";

/** A solved demonstration of the quickstart's shape, with the fields a case changes. */
function result(id: string, over: Partial<RolloutResult>): RolloutResult {
  return { ...fixtureResult(id, "calcrun-train-s2-0001", "chat-agent", 1), harnessDetail: "done after 2 turns", ...over };
}

describe("the warm start's line about oracle demonstrations that did not solve their task", () => {
  it("says nothing when every demonstration was solved", () => {
    expect(unsolvedDemosLine([result("demo-a", {}), result("demo-b", {})])).toBeUndefined();
  });

  it("counts the unsolved ones by status and names the first three with their reasons (a loaded machine's timeouts)", () => {
    const results = [
      result("demo-ok", {}),
      result("demo-t1", { status: "timeout", score: 0, verifier: null, error: "harness ran past 60 s\n    at stack line", harnessDetail: "" }),
      result("demo-f1", { status: "task_failed", score: 0, verifier: { score: 0, subscores: {}, error: "no answer.txt" } }),
      result("demo-t2", { status: "timeout", score: 0, verifier: null, error: "harness ran past 60 s" }),
      result("demo-c1", { status: "harness_crash", score: 0, verifier: null, error: null, harnessDetail: "no result line (exit 1)" }),
    ];
    const line = unsolvedDemosLine(results);
    expect(line).toBe(
      "warm start: 4 demonstration(s) left out of SFT (timeout 2, task_failed 1, harness_crash 1): demo-t1: timeout, harness ran past 60 s; demo-f1: task_failed, no answer.txt; demo-t2: timeout, harness ran past 60 s; 1 more",
    );
  });

  it("keeps each reason to one short line, and says so when a result gives none", () => {
    const long = "x".repeat(400);
    const line = unsolvedDemosLine([result("demo-l", { status: "infra_error", error: long }), result("demo-n", { status: "task_failed", verifier: null, harnessDetail: "" })]) ?? "";
    expect(line).toContain(`demo-l: infra_error, ${"x".repeat(157)}...;`);
    expect(line).toContain("demo-n: task_failed, no reason given");
    expect(line).not.toContain("\n");
  });
});
