import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HarnessRLError } from "../../src/core/errors.js";
import { compareEvaluations, formatComparison, type ComparableEvaluation } from "../../src/eval/compare.js";
import { evaluationPath, readEvaluation } from "../../src/eval/evaluation-file.js";
import { passChange, summarise } from "../../src/eval/metrics.js";
import { result } from "../advantage/fixtures.js";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();

/** An evaluation of tasks t0..t{n-1} on two harnesses; `passes(task, harness)` says which pass. */
function evaluation(n: number, passes: (i: number, harness: string) => boolean, seeds?: string): ComparableEvaluation {
  const results = ["chat-agent", "resp-agent"].flatMap((h) => Array.from({ length: n }, (_, i) => {
    const pass = passes(i, h);
    return result(`t${i}-${h}`, `t${i}`, h, pass ? 1 : 0, pass ? "ok" : "task_failed");
  }));
  return { ...summarise(results, 1), ...(seeds === undefined ? {} : { samplingSeeds: seeds }) };
}

describe("comparing two evaluations (harnessrl compare)", () => {
  it("two runs of one plan under one key: paired over the groups, with common random numbers and the groups' moves", () => {
    // A passes tasks 0-9 on both harnesses; B passes 0-13 on chat-agent and 2-9 on resp-agent: 4 up, 2 down.
    const a = evaluation(20, (i) => i < 10, "eval-seed-7");
    const b = evaluation(20, (i, h) => (h === "chat-agent" ? i < 14 : i >= 2 && i < 10), "eval-seed-7");
    const c = compareEvaluations(a, b);
    expect(c.commonRandomNumbers).toBe(true);
    expect(c.samplingSeeds).toBe("eval-seed-7");
    expect(c.overall).toMatchObject({ paired: true, groups: 40, dropped: 0, up: 4, down: 2, a: 0.5, b: 0.55 });
    expect(c.overall.change).toBeCloseTo(0.05, 12);
    // The standard error is the paired one: the spread of the 40 per-group differences (4 × +1, 2 × −1, 34 × 0).
    const diffs = [...Array<number>(4).fill(1), ...Array<number>(2).fill(-1), ...Array<number>(34).fill(0)];
    const mean = diffs.reduce((s, d) => s + d, 0) / 40;
    const sd = Math.sqrt(diffs.reduce((s, d) => s + (d - mean) ** 2, 0) / 39);
    expect(c.overall.stderr).toBeCloseTo(sd / Math.sqrt(40), 12);
    expect(c.overall.z).toBeCloseTo(c.overall.change / c.overall.stderr, 12);
    expect(Object.keys(c.byHarness)).toEqual(["chat-agent", "resp-agent"]);
    expect(c.byHarness["chat-agent"]).toMatchObject({ up: 4, down: 0, groups: 20 });
    expect(c.byHarness["resp-agent"]).toMatchObject({ up: 0, down: 2, groups: 20 });
    const text = formatComparison(c, { a: "A.json", b: "B.json" });
    expect(text).toContain("common random numbers (key eval-seed-7)");
    expect(text).toMatch(/overall\s+50\.0 % →\s+55\.0 %\s+\+5\.0 ± \d\.\d points \(z \d\.\d; paired over 40 groups, 4 up, 2 down\)/);
    expect(text).toMatch(/resp-agent .* −10\.0 ± /);
  });

  it("a run's before and after: the same change as the run's own summary (passChange)", () => {
    const before = evaluation(30, (i) => i % 3 === 0, "k");
    const after = evaluation(30, (i) => i % 3 !== 2, "k");
    const c = compareEvaluations(before, after);
    const delta = passChange(before.overall, after.overall);
    expect(c.overall).toMatchObject({ change: delta.change, stderr: delta.stderr, z: delta.z, paired: true, up: 20, down: 0 });
  });

  it("different sampling keys, or none: still paired by group, but not common random numbers", () => {
    const a = evaluation(10, (i) => i < 5, "key-a");
    expect(compareEvaluations(a, evaluation(10, (i) => i < 6, "key-b")).commonRandomNumbers).toBe(false);
    const none = compareEvaluations(evaluation(10, (i) => i < 5), evaluation(10, (i) => i < 6));
    expect(none.commonRandomNumbers).toBe(false);
    expect(none.samplingSeeds).toBeUndefined();
    expect(none.overall.paired).toBe(true);
    expect(formatComparison(none, { a: "a", b: "b" })).toContain("no common random numbers");
  });

  it("evaluations of different tasks are compared as independent ones, never paired on their overlap", () => {
    const c = compareEvaluations(evaluation(10, (i) => i < 5, "k"), evaluation(12, (i) => i < 9, "k"));
    expect(c.overall).toMatchObject({ paired: false, up: 0, down: 0 });
    expect(c.overall.change).toBeCloseTo(9 / 12 - 0.5, 12);
    expect(formatComparison(c, { a: "a", b: "b" })).toContain("unpaired (the evaluations planned different groups)");
  });

  it("a harness only one evaluation ran is left out of the per-harness lines", () => {
    const a = evaluation(4, () => true, "k");
    const b = { ...evaluation(4, () => true, "k"), byHarness: { "chat-agent": evaluation(4, () => true).byHarness["chat-agent"]! } };
    expect(Object.keys(compareEvaluations(a, b).byHarness)).toEqual(["chat-agent"]);
  });
});

describe("reading an evaluation to compare", () => {
  const write = (dir: string, name: string, value: unknown): string => {
    const path = join(dir, name);
    writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value));
    return path;
  };
  const codeOf = (f: () => unknown): string => {
    try {
      f();
    } catch (e) {
      if (e instanceof HarnessRLError) return `${e.fault}:${e.code}`;
      throw e;
    }
    return "no error";
  };

  it("names a run directory's evaluation by phase, and takes an evaluation file as it is", () => {
    const run = tempDir("hrl-compare-run-");
    const before = write(run, "eval-before.json", evaluation(2, () => false, "k"));
    const after = write(run, "eval-after.json", evaluation(2, () => true, "k"));
    expect(evaluationPath(`${run}:before`)).toBe(before);
    expect(evaluationPath(`${run}:after`)).toBe(after);
    expect(evaluationPath(run)).toBe(after);
    expect(evaluationPath(before)).toBe(before);
    expect(readEvaluation(after)).toMatchObject({ samplingSeeds: "k", overall: { passAt1: 1 } });
    // `harnessrl eval --out DIR` writes eval.json: a bare DIR names it.
    const out = tempDir("hrl-compare-eval-");
    const evalJson = write(out, "eval.json", evaluation(2, () => true));
    expect(evaluationPath(out)).toBe(evalJson);
    expect(codeOf(() => evaluationPath(`${out}:before`))).toBe("user:evaluation_not_found");
    expect(codeOf(() => evaluationPath(join(out, "missing")))).toBe("user:run_dir_not_found");
  });

  it("a file that is not an evaluation summary, or whose numbers cannot be rates, is a user error naming the file", () => {
    const dir = tempDir("hrl-compare-bad-");
    const good = evaluation(2, (i) => i === 0) as unknown as { overall: { groupRates: Record<string, number> } };
    expect(codeOf(() => readEvaluation(write(dir, "cut.json", '{"overall": {"passAt1": 0.5,')))).toBe("user:invalid_evaluation");
    expect(codeOf(() => readEvaluation(write(dir, "config.json", { name: "quickstart", seed: 0 })))).toBe("user:invalid_evaluation");
    const rate = { ...good, overall: { ...good.overall, groupRates: { "t0/chat-agent": 7 } } };
    expect(codeOf(() => readEvaluation(write(dir, "rate.json", rate)))).toBe("user:invalid_evaluation");
    const stderr = { ...good, overall: { ...good.overall, passAt1Stderr: -1 } };
    expect(codeOf(() => readEvaluation(write(dir, "stderr.json", stderr)))).toBe("user:invalid_evaluation");
    expect(() => readEvaluation(join(dir, "rate.json"))).toThrow(/rate\.json: not an evaluation summary \(overall\.groupRates\.t0\/chat-agent: /);
    // A summary written before per-harness metrics or lost groups existed still reads (both default to none).
    const old = { overall: { passAt1: 0.5, passAt1Stderr: 0.1, groupRates: { "t0/h": 1, "t1/h": 0 } } };
    expect(readEvaluation(write(dir, "old.json", old))).toEqual({ overall: old.overall, byHarness: {} });
    mkdirSync(join(dir, "sub"));
    expect(codeOf(() => readEvaluation(join(dir, "sub")))).toBe("user:invalid_evaluation");
  });
});
