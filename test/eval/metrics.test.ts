import { describe, expect, it } from "vitest";
import { groupMetrics, passAtK, summarise } from "../../src/eval/metrics.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";

function result(taskId: string, harness: string, score: number, status: RolloutResult["status"] = score >= 1 ? "ok" : "task_failed", f1?: number): RolloutResult {
  return {
    rolloutId: `${taskId}-${harness}-${Math.random()}`,
    taskId,
    harness,
    sample: 0,
    family: taskId.split("-")[0]!,
    split: "test",
    status,
    score,
    verifier: { score, subscores: f1 === undefined ? {} : { f1 } },
    harnessDetail: "",
    exitCode: 0,
    signal: null,
    stdout: "",
    stderr: "",
    error: null,
    sessionIds: [],
    calls: 1,
    timings: { startedAt: 0, sandboxReadyAt: 0, harnessEndedAt: 0, settledAt: 0, verifiedAt: 0, endedAt: 0 },
  };
}

describe("pass@k", () => {
  it("matches hand-computed values of 1 - C(n-c,k)/C(n,k)", () => {
    expect(passAtK(4, 1, 1)).toBeCloseTo(0.25, 12);
    expect(passAtK(4, 1, 2)).toBeCloseTo(1 - 3 / 6, 12); // C(3,2)/C(4,2)
    expect(passAtK(5, 2, 3)).toBeCloseTo(1 - 1 / 10, 12); // C(3,3)/C(5,3)
    expect(passAtK(3, 0, 2)).toBe(0);
    expect(passAtK(3, 3, 1)).toBe(1);
    expect(passAtK(2, 1, 5)).toBe(1);
  });
});

describe("eval summary", () => {
  it("averages pass rates per (task, harness), excludes infra errors and reports F1", () => {
    const rs = [
      result("lookup-a", "h1", 1, "ok", 1),
      result("lookup-a", "h1", 0.5, "task_failed", 0.5),
      result("lookup-b", "h1", 0, "task_failed", 0),
      result("lookup-b", "h1", 0, "infra_error", 0),
      result("arith-c", "h2", 1),
    ];
    const g = groupMetrics(rs.slice(0, 4), 2);
    expect(g.infraErrors).toBe(1);
    expect(g.passAt1).toBeCloseTo((0.5 + 0) / 2, 12);
    expect(g.passAtK).toBeCloseTo((1 + 0) / 2, 12);
    expect(g.meanScore).toBeCloseTo(1.5 / 3, 12);
    expect(g.f1).toBeCloseTo(0.5, 12);
    const s = summarise(rs, 2);
    expect(Object.keys(s.byHarness)).toEqual(["h1", "h2"]);
    expect(s.byFamily.arith?.passAt1).toBe(1);
    expect(s.byFamily.arith?.f1).toBeNull();
  });

  it("pass@1's standard error is the sample std of the per-(task, harness) rates over √groups", () => {
    // Group rates 1, 0.5, 0 → mean 0.5, sample variance 0.25, se √(0.25 / 3).
    const rs = [result("a", "h", 1), result("b", "h", 1), result("b", "h", 0), result("c", "h", 0)];
    const g = groupMetrics(rs, 1);
    expect(g.passAt1).toBeCloseTo(0.5, 12);
    expect(g.passAt1Stderr).toBeCloseTo(Math.sqrt(0.25 / 3), 12);
    expect(groupMetrics(rs.slice(0, 1), 1).passAt1Stderr).toBe(0);
  });
});
