import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();
const root = join(import.meta.dirname, "..", "..");
const TABLE = join(root, "experiments", "real-harness-scaling", "table.mjs");

/** An evaluation file as `harnessrl eval`/`train` writes it, reduced to what the table reads. */
function evalFile(rates: Record<string, number[]>): unknown {
  const byHarness = Object.fromEntries(
    Object.entries(rates).map(([h, xs]) => [h, { groupRates: Object.fromEntries(xs.map((x, i) => [`calcrun-test-s3-${String(i).padStart(4, "0")}/${h}`, x])) }]),
  );
  return { byHarness };
}

function write(dir: string, rel: string, value: unknown): void {
  const path = join(dir, rel);
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, JSON.stringify(value));
}

interface Change {
  n: number;
  mean: number | null;
  se: number | null;
  z: number | null;
}
interface Tables {
  rows: { arm: string; seeds: number[]; cells: Record<string, { after: { n: number; mean: number | null }; change: Change }> }[];
  questions: { label: string; a: string; b: string; change: Change }[];
}

describe("experiments/real-harness-scaling/table.mjs", () => {
  it("pools seeds per cell and pairs changes over (seed, task) groups, never across seeds", () => {
    const dir = tempDir("real-scaling-table-");
    write(dir, "plan.json", { scale: "ci", seeds: [0, 1], arms: ["one", "two"], train: ["pi"], heldOut: "chat-agent" });
    // Seed 0: the warm start passes tasks 0-1 of 4 on the held-out harness; arm "one" keeps them, arm "two" adds task 2.
    write(dir, "s0/warm/eval-before.json", evalFile({ pi: [1, 0, 0, 0], "chat-agent": [1, 1, 0, 0] }));
    write(dir, "s0/one/eval-after.json", evalFile({ pi: [1, 1, 0, 0], "chat-agent": [1, 1, 0, 0] }));
    write(dir, "s0/two/eval-after.json", evalFile({ pi: [1, 1, 1, 0], "chat-agent": [1, 1, 1, 0] }));
    // Seed 1 shares task ids with seed 0 but is another warm start: its groups pair only with seed 1's.
    write(dir, "s1/warm/eval-before.json", evalFile({ pi: [0, 0, 0, 0], "chat-agent": [0, 0, 0, 0] }));
    write(dir, "s1/one/eval-after.json", evalFile({ pi: [0, 0, 0, 1], "chat-agent": [0, 0, 0, 0] }));
    write(dir, "s1/two/eval-after.json", evalFile({ pi: [1, 0, 0, 1], "chat-agent": [0, 0, 0, 1] }));

    const r = spawnSync(process.execPath, [TABLE, "--root", dir], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const t = JSON.parse(readFileSync(join(dir, "table.json"), "utf8")) as Tables;
    const one = t.rows.find((x) => x.arm === "one");
    const two = t.rows.find((x) => x.arm === "two");
    expect(one?.seeds).toEqual([0, 1]);
    // 8 groups per cell (2 seeds × 4 tasks); arm "two" passes 5 of 8 on pi, 4 of 8 on the held-out harness.
    expect(two?.cells.pi?.after).toMatchObject({ n: 8, mean: 5 / 8 });
    expect(two?.cells["chat-agent"]?.after).toMatchObject({ n: 8, mean: 0.5 });
    // Against its own warm start: pi differences (0,+1,0,0 | 0,0,0,+1) → +2/8.
    expect(one?.cells.pi?.change.n).toBe(8);
    expect(one?.cells.pi?.change.mean).toBeCloseTo(2 / 8, 12);
    const sd = Math.sqrt((2 * (1 - 0.25) ** 2 + 6 * 0.25 ** 2) / 7);
    expect(one?.cells.pi?.change.se).toBeCloseTo(sd / Math.sqrt(8), 12);
    // Arm against arm on the held-out harness: two − one = (0,0,+1,0 | 0,0,0,+1) → +2/8 over the same 8 groups.
    const q = t.questions.find((x) => x.a === "two" && x.b === "one");
    expect(q?.change.n).toBe(8);
    expect(q?.change.mean).toBeCloseTo(2 / 8, 12);
    expect(q?.change.z).toBeCloseTo(2 / 8 / (sd / Math.sqrt(8)), 9);
    expect(r.stdout).toContain("| two | 2 |");
    expect(r.stdout).toContain("2 training harnesses vs 1 (two − one)");
  });

  it("shows an arm that has not run yet as empty cells instead of failing", () => {
    const dir = tempDir("real-scaling-table-");
    write(dir, "plan.json", { scale: "full", seeds: [0], arms: ["one", "four-bandit"], train: ["pi", "codex", "qwen-code", "claude-code"], heldOut: "openclaw" });
    write(dir, "s0/warm/eval-before.json", evalFile({ pi: [1, 0], openclaw: [0, 0] }));
    write(dir, "s0/one/eval-after.json", evalFile({ pi: [1, 1], openclaw: [0, 1] }));
    const r = spawnSync(process.execPath, [TABLE, "--root", dir], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const t = JSON.parse(readFileSync(join(dir, "table.json"), "utf8")) as Tables;
    expect(t.rows.find((x) => x.arm === "four-bandit")?.seeds).toEqual([]);
    expect(t.rows.find((x) => x.arm === "four-bandit")?.cells.openclaw?.after.mean).toBeNull();
    expect(r.stdout).toContain("| four-bandit | 0 | –; – |");
  });
});
