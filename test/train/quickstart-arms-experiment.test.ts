import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tempDirs } from "../temp-dirs.js";
import { tinyQuickstartSets } from "./tiny-quickstart.js";

/**
 * Paired recipe arms (experiments/quickstart-seeds/arms.mjs) at a size a test can run: one real warm start (tiny-1m,
 * bwrap, llama.cpp, torch) shrunk to 2 demonstration tasks and 1 SFT epoch, then two arms resumed from copies of it
 * (the shipped RL step, and one at another learning rate), compared with `harnessrl compare`.
 */

const tempDir = tempDirs();
const root = join(import.meta.dirname, "..", "..");
const ARMS = join(root, "experiments", "quickstart-seeds", "arms.mjs");

// Every run of the root: the quickstart's recipe shrunk (tiny-quickstart.ts), 2 held-out tasks per harness.
const TINY = tinyQuickstartSets(2).flatMap((s) => ["--set", s]);

const node = (args: string[]): { status: number | null; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, [ARMS, ...args], { cwd: root, encoding: "utf8", timeout: 10 * 60_000, maxBuffer: 64 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};
const json = <T>(path: string): T => JSON.parse(readFileSync(path, "utf8")) as T;
const stepRewards = (dir: string): number[] =>
  readFileSync(join(dir, "metrics.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { phase?: string; "reward/mean"?: number })
    .filter((r) => r.phase !== "sft" && typeof r["reward/mean"] === "number")
    .map((r) => r["reward/mean"]!);

describe("paired recipe arms from one warm start (experiments/quickstart-seeds/arms.mjs) at CI size", () => {
  let dir: string;
  let base: ReturnType<typeof node>;
  let lr: ReturnType<typeof node>;

  beforeAll(() => {
    dir = tempDir("qs-arms-");
    base = node(["--arm", "base", "--seeds", "1", "--root", dir, ...TINY]);
    lr = node(["--arm", "lr", "--arm-set", "algorithm.lr=0.05", "--seeds", "1", "--root", dir, "--against", "base", ...TINY]);
  }, 21 * 60_000);

  it("makes the seed's warm start once and resumes a copy of it in each arm: same start, same first RL step", () => {
    expect(base.status, `${base.stdout.slice(-3000)}\n${base.stderr.slice(-3000)}`).toBe(0);
    expect(lr.status, `${lr.stdout.slice(-3000)}\n${lr.stderr.slice(-3000)}`).toBe(0);
    expect(base.stdout).toContain("[arms] seed 1: warm start");
    expect(lr.stdout).not.toContain("warm start\n");
    const warm = join(dir, "warm", "s1");
    expect(json<{ warmStartDone: boolean; step: number }>(join(warm, "state.json"))).toMatchObject({ warmStartDone: true, step: 0 });
    expect(existsSync(join(warm, "eval-after.json"))).toBe(false);
    const arms = ["base", "lr"].map((a) => join(dir, "arms", a, "s1"));
    for (const a of arms) {
      // The before-RL evaluation is the warm start's, not run again; each arm ran its RL step and the evaluation after.
      expect(readFileSync(join(a, "eval-before.json"), "utf8")).toBe(readFileSync(join(warm, "eval-before.json"), "utf8"));
      expect(json<{ steps: number }>(join(a, "summary.json")).steps).toBe(1);
      expect(existsSync(join(a, "eval-after.json"))).toBe(true);
    }
    // Step 1 samples from the warm start in both arms with the same seeds: the same rollouts, whatever the arm's lr.
    expect(stepRewards(arms[1]!)).toEqual(stepRewards(arms[0]!));
    expect(readFileSync(join(arms[1]!, "config.yaml"), "utf8")).toMatch(/lr: 0\.05/);
  });

  it("compares the arm with the base, seed by seed, paired with common random numbers", () => {
    const against = json<{ rows: { seed: number; vsBase: number; commonRandomNumbers: boolean }[]; mean: number }>(join(dir, "arms", "lr", "against-base.json"));
    expect(against.rows.map((r) => [r.seed, r.commonRandomNumbers])).toEqual([[1, true]]);
    expect(against.mean).toBe(against.rows[0]?.vsBase);
    expect(lr.stdout).toMatch(/\| 1 \| [+−]\d+\.\d \(z -?\d+\.\d\) \| [+−]\d+\.\d \| [+−]\d+\.\d ± \d+\.\d \(\d+\/\d+\) \|/);
    expect(lr.stdout).toContain("lr − base over 1 seed(s)");
  });

  it("skips finished arms when run again, and refuses settings that would mix two experiments", () => {
    const again = node(["--arm", "base", "--seeds", "1", "--root", dir, ...TINY]);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toContain("[arms] base seed 1: done before, skipped");
    const warmSet = node(["--arm", "x", "--arm-set", "warm_start.epochs=2", "--seeds", "1", "--root", dir, ...TINY]);
    expect(warmSet.status).toBe(1);
    expect(warmSet.stderr).toContain("an arm resumes the seed's warm start");
    const otherRecipe = node(["--arm", "base", "--arm-set", "algorithm.lr=0.01", "--seeds", "1", "--root", dir, ...TINY]);
    expect(otherRecipe.status).toBe(1);
    expect(otherRecipe.stderr).toContain("arm base was made with armSets [], not");
    const otherWarm = node(["--arm", "y", "--seeds", "1", "--root", dir, ...TINY, "--set", "warm_start.epochs=2"]);
    expect(otherWarm.status).toBe(1);
    expect(otherWarm.stderr).toContain("was made with sets");
  });
});
