import { createHash } from "node:crypto";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { EvalJournal, type EvalJournalKey } from "../../src/eval/journal.js";
import { result } from "../advantage/fixtures.js";

const root = mkdtempSync(join(tmpdir(), "hrl-evaljournal-"));
let n = 0;
const fresh = (): string => join(root, `j${n++}`, "eval-before.jsonl");
const key: EvalJournalKey = { label: "eval-before", policy: "v1", taskIds: ["t0", "t1", "t2"], harnesses: ["pi"], samples: 2 };
const r = (task: string, sample: number, score = 1): RolloutResult => ({ ...result(`eval-before-${task}-pi-${sample}`, task, "pi", score), sample });
const lines = (path: string): string[] => readFileSync(path, "utf8").trim().split("\n");

describe("an evaluation journal keeps finished rollouts across a kill and never counts another evaluation's", () => {
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("a killed evaluation reopened for the same policy and plan continues with the results it had", () => {
    const path = fresh();
    const first = EvalJournal.open(path, key);
    expect(first.opening).toEqual({ resumed: false, kept: 0, tornTail: false });
    first.journal.append(r("t0", 0));
    first.journal.append(r("t2", 1, 0));
    const again = EvalJournal.open(path, key);
    expect(again.opening).toEqual({ resumed: true, kept: 2, tornTail: false });
    expect(again.journal.done.map((x) => [x.taskId, x.sample, x.score])).toEqual([["t0", 0, 1], ["t2", 1, 0]]);
    expect(again.journal.has({ taskId: "t0", harness: "pi", sample: 0 })).toBe(true);
    expect(again.journal.has({ taskId: "t0", harness: "pi", sample: 1 })).toBe(false);
    again.journal.append(r("t1", 0));
    expect(EvalJournal.open(path, key).journal.done).toHaveLength(3);
  });

  it("a last line cut mid-write (non-ASCII output before it) is dropped and the file truncated at the last whole line", () => {
    const path = fresh();
    const { journal } = EvalJournal.open(path, key);
    journal.append({ ...r("t0", 0), stdout: "résultat ✓ 计算 😀\n" });
    const whole = readFileSync(path);
    appendFileSync(path, JSON.stringify(r("t1", 0)).slice(0, 70));
    const reopened = EvalJournal.open(path, key);
    expect(reopened.opening).toEqual({ resumed: true, kept: 1, tornTail: true });
    expect(readFileSync(path)).toEqual(whole);
    expect(reopened.journal.done[0]?.stdout).toBe("résultat ✓ 计算 😀\n");
    reopened.journal.append(r("t1", 0));
    expect(EvalJournal.open(path, key).journal.done.map((x) => x.taskId)).toEqual(["t0", "t1"]);
  });

  it("another policy version's, another plan's or another label's journal is started afresh, not counted", () => {
    for (const other of [{ ...key, policy: "v2" }, { ...key, taskIds: ["t0", "t1"] }, { ...key, samples: 4 }, { ...key, label: "eval-after" }, { ...key, samplingSeeds: "eval-seed-0" }]) {
      const path = fresh();
      EvalJournal.open(path, key).journal.append(r("t0", 0));
      const reopened = EvalJournal.open(path, other);
      expect(reopened.opening.kept).toBe(0);
      expect(reopened.opening.restarted).toMatch(/another evaluation/);
      expect(reopened.journal.done).toEqual([]);
      expect(lines(path)).toHaveLength(1);
    }
  });

  it("a plan without common random numbers keeps the digest journals had before the key existed; with them, its seeds join it", () => {
    const path = fresh();
    EvalJournal.open(path, key).journal.append(r("t0", 0));
    const header = JSON.parse(lines(path)[0]!) as { plan: string };
    expect(header.plan).toBe(createHash("sha256").update(JSON.stringify({ tasks: key.taskIds, harnesses: key.harnesses, samples: key.samples })).digest("hex").slice(0, 16));
    const seeded = { ...key, samplingSeeds: "eval-seed-0" };
    const other = fresh();
    EvalJournal.open(other, seeded).journal.append(r("t0", 0));
    expect(EvalJournal.open(other, seeded).opening.kept).toBe(1);
    expect((JSON.parse(lines(other)[0]!) as { plan: string }).plan).not.toBe(header.plan);
  });

  it("a forged or foreign line restarts the evaluation rather than count it: a score the verifier did not give, a task outside the plan, a repeat, garbage", () => {
    const cases: [string, (path: string) => void][] = [
      ["a rollout result", (p) => appendFileSync(p, `${JSON.stringify({ ...r("t1", 0), score: 1, verifier: { score: 0, subscores: {} } })}\n`)],
      ["outside the evaluation's plan", (p) => appendFileSync(p, `${JSON.stringify(r("t9", 0))}\n`)],
      ["outside the evaluation's plan", (p) => appendFileSync(p, `${JSON.stringify(r("t1", 2))}\n`)],
      ["repeats a rollout", (p) => appendFileSync(p, `${JSON.stringify(r("t0", 0))}\n`)],
      ["not JSON", (p) => appendFileSync(p, "{not json\n")],
    ];
    for (const [why, tamper] of cases) {
      const path = fresh();
      EvalJournal.open(path, key).journal.append(r("t0", 0));
      tamper(path);
      const reopened = EvalJournal.open(path, key);
      expect(reopened.opening.restarted, why).toContain(why);
      expect(reopened.journal.done).toEqual([]);
      expect(lines(path)).toHaveLength(1);
    }
  });

  it("a file without a journal header is not read as one", () => {
    for (const text of ["", "{}\n", `${JSON.stringify(r("t0", 0))}\n`, '{"journal":"harnessrl-eval","version":1,"label":"eval-before","policy":"v1","plan":"x","rollouts":6}']) {
      const path = fresh();
      EvalJournal.open(path, key);
      writeFileSync(path, text);
      const reopened = EvalJournal.open(path, key);
      expect(reopened.opening.kept).toBe(0);
      expect(reopened.opening.restarted).toBeDefined();
      expect(JSON.parse(lines(path)[0] ?? "")).toMatchObject({ journal: "harnessrl-eval", label: "eval-before", policy: "v1", rollouts: 6 });
    }
  });
});
