import { describe, expect, it } from "vitest";
import { groupMetrics, passAtK, passChange, summarise } from "../../src/eval/metrics.js";
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

describe("before/after change", () => {
  it("is paired over the same (task, harness) groups: the std of per-group differences over √pairs", () => {
    // Rates before a 0, b 0, c 1, d 0.5; after a 1, b 0, c 1, d 1 → differences 1, 0, 0, 0.5.
    const before = groupMetrics([result("a", "h", 0), result("b", "h", 0), result("c", "h", 1), result("d", "h", 1), result("d", "h", 0)], 1);
    const after = groupMetrics([result("a", "h", 1), result("b", "h", 0), result("c", "h", 1), result("d", "h", 1), result("d", "h", 1)], 1);
    const c = passChange(before, after);
    const d = [1, 0, 0, 0.5];
    const mean = 0.375;
    const sd = Math.sqrt(d.reduce((s, v) => s + (v - mean) ** 2, 0) / 3);
    expect(c.paired).toBe(true);
    expect(c.groups).toBe(4);
    expect(c.change).toBeCloseTo(after.passAt1 - before.passAt1, 12);
    expect(c.change).toBeCloseTo(mean, 12);
    expect(c.stderr).toBeCloseTo(sd / 2, 12);
    expect(c.z).toBeCloseTo(mean / (sd / 2), 12);
  });

  it("pairing removes the spread of task difficulty that both evaluations share", () => {
    // Half the tasks always pass, half never, and one more task passes after: independent SEs see the 0/1 spread,
    // the paired SE only the one change.
    const tasks = Array.from({ length: 20 }, (_, i) => `t${i}`);
    const before = groupMetrics(tasks.map((t, i) => result(t, "h", i < 10 ? 1 : 0)), 1);
    const after = groupMetrics(tasks.map((t, i) => result(t, "h", i < 11 ? 1 : 0)), 1);
    const c = passChange(before, after);
    expect(c.paired).toBe(true);
    expect(c.stderr).toBeCloseTo(Math.sqrt((1 - 1 / 20) ** 2 / 19 + (19 * (1 / 20) ** 2) / 19) / Math.sqrt(20), 12);
    expect(c.stderr).toBeLessThan(Math.hypot(before.passAt1Stderr, after.passAt1Stderr) / 3);
  });

  it("falls back to independent evaluations when the groups differ", () => {
    const before = groupMetrics([result("a", "h", 1), result("b", "h", 0)], 1);
    const after = groupMetrics([result("a", "h", 1), result("c", "h", 1), result("d", "h", 0)], 1);
    const c = passChange(before, after);
    expect(c.paired).toBe(false);
    expect(c.groups).toBe(5);
    expect(c.change).toBeCloseTo(after.passAt1 - before.passAt1, 12);
    expect(c.stderr).toBeCloseTo(Math.hypot(before.passAt1Stderr, after.passAt1Stderr), 12);
  });

  it("stays paired when one evaluation lost a whole group to infrastructure errors: pairs over the groups both rated, the lost one counted", () => {
    // One sample per group (the quickstart's evaluation): task c's only rollout after RL was an infra error.
    const before = groupMetrics([result("a", "h", 0), result("b", "h", 1), result("c", "h", 0), result("d", "h", 0), result("e", "h", 1)], 1);
    const after = groupMetrics([result("a", "h", 1), result("b", "h", 1), result("c", "h", 0, "infra_error"), result("d", "h", 1), result("e", "h", 1)], 1);
    expect(after.lostGroups).toEqual(["c/h"]);
    expect(before.lostGroups).toEqual([]);
    const c = passChange(before, after);
    // Differences over a, b, d, e: 1, 0, 1, 0.
    expect(c).toMatchObject({ paired: true, groups: 4, dropped: 1 });
    expect(c.change).toBeCloseTo(0.5, 12);
    expect(c.stderr).toBeCloseTo(Math.sqrt(1 / 3) / 2, 12);
    // Not the unpaired figure the plain means would give (0.6 over 4 and 5 groups).
    expect(after.passAt1 - before.passAt1).toBeCloseTo(1 - 0.4, 12);
  });

  it("a group with some rollouts lost still has a rate and stays a pair; one lost in both evaluations is dropped once", () => {
    const before = groupMetrics([result("a", "h", 1), result("a", "h", 0, "infra_error"), result("b", "h", 0), result("c", "h", 0, "infra_error"), result("d", "h", 0)], 1);
    const after = groupMetrics([result("a", "h", 1), result("a", "h", 1), result("b", "h", 1), result("c", "h", 0, "infra_error"), result("d", "h", 0)], 1);
    expect(before.groupRates).toEqual({ "a/h": 1, "b/h": 0, "d/h": 0 });
    expect(passChange(before, after)).toMatchObject({ paired: true, groups: 3, dropped: 1 });
  });

  it("evaluations of different plans are independent even when most groups overlap", () => {
    const before = groupMetrics([result("a", "h", 1), result("b", "h", 0), result("c", "h", 0)], 1);
    const after = groupMetrics([result("a", "h", 1), result("b", "h", 1), result("c", "h", 0), result("z", "h", 1)], 1);
    expect(passChange(before, after)).toMatchObject({ paired: false, groups: 7, dropped: 0 });
    // Nor does a group planned only in one evaluation count as lost in the other.
    const lost = groupMetrics([result("a", "h", 1), result("b", "h", 1), result("c", "h", 0), result("z", "h", 0, "infra_error")], 1);
    expect(passChange(before, lost).paired).toBe(false);
  });

  it("reads summaries written before lost groups were recorded as planning their rated groups", () => {
    const before = groupMetrics([result("a", "h", 0), result("b", "h", 1)], 1);
    const after = groupMetrics([result("a", "h", 1), result("b", "h", 1)], 1);
    const { lostGroups: _gone, ...old } = before;
    expect(passChange(old as typeof before, after)).toMatchObject({ paired: true, groups: 2, dropped: 0 });
  });

  it("keeps the harness in the group key: the same task through two harnesses is two pairs", () => {
    const g = groupMetrics([result("a", "h1", 1), result("a", "h2", 0)], 1);
    expect(g.groupRates).toEqual({ "a/h1": 1, "a/h2": 0 });
  });
});
