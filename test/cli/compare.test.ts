import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, runCli } from "../setup/cli.js";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();

/** `harnessrl eval` with the oracle over 3 calcrun tasks on two built-in harnesses (bwrap), under a sampling key. */
function evalCli(out: string, seeds: string): { status: number | null; stderr: string } {
  const args = ["dist/cli/main.js", "eval", "--engine", "oracle", "--tasks", "calcrun:test?n=3&seed=5", "--harness", "chat-agent,resp-agent", "--samples", "1", "--seeds", seeds, "--out", out];
  const r = spawnSync(process.execPath, args, { cwd: REPO_ROOT, encoding: "utf8", timeout: 300_000 });
  return { status: r.status, stderr: r.stderr };
}

interface ComparisonJson {
  a: string;
  b: string;
  commonRandomNumbers: boolean;
  samplingSeeds?: string;
  overall: { a: number; b: number; change: number; paired: boolean; groups: number; up: number; down: number };
  byHarness: Record<string, { groups: number }>;
}

describe("harnessrl compare on the evaluations `harnessrl eval` writes (oracle, calcrun, two harnesses, bwrap)", () => {
  let dir: string;
  beforeAll(() => {
    dir = tempDir("hrl-compare-cli-");
    for (const [name, key] of [
      ["one", "key-1"],
      ["two", "key-1"],
      ["other", "key-2"],
    ] as const) {
      const r = evalCli(join(dir, name), key);
      expect(r.status, r.stderr).toBe(0);
    }
  }, 600_000);

  it("two evaluations of one policy under one key: no change, paired over every group, common random numbers", async () => {
    const r = await runCli(["compare", join(dir, "one"), join(dir, "two"), "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const c = JSON.parse(r.stdout) as ComparisonJson;
    expect(c.a).toBe(join(dir, "one", "eval.json"));
    expect(c).toMatchObject({ commonRandomNumbers: true, samplingSeeds: "key-1" });
    expect(c.overall).toMatchObject({ a: 1, b: 1, change: 0, paired: true, groups: 6, up: 0, down: 0 });
    expect(Object.entries(c.byHarness).map(([h, g]) => [h, g.groups])).toEqual([
      ["chat-agent", 3],
      ["resp-agent", 3],
    ]);
    const text = await runCli(["compare", join(dir, "one"), join(dir, "other")]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("no common random numbers");
    expect(text.stdout).toMatch(/overall\s+100\.0 % →\s+100\.0 %\s+\+0\.0 ± 0\.0 points \(z 0\.0; paired over 6 groups, 0 up, 0 down\)/);
  });

  it("careless arguments and files that are not evaluations get one line and exit code 2", async () => {
    const oneLine = (r: { code: number | null; stderr: string }, code: string): void => {
      const text = r.stderr.trim();
      expect(text.split("\n"), text).toHaveLength(1);
      expect(text).toContain(`[${code}]`);
      expect(r.code).toBe(2);
    };
    oneLine(await runCli(["compare", join(dir, "one")]), "invalid_arguments");
    oneLine(await runCli(["compare", join(dir, "one"), join(dir, "nowhere")]), "run_dir_not_found");
    oneLine(await runCli(["compare", join(dir, "one"), `${join(dir, "two")}:before`]), "evaluation_not_found");
    const forged = join(dir, "forged.json");
    const summary = JSON.parse(readFileSync(join(dir, "two", "eval.json"), "utf8")) as { overall: { passAt1: number } };
    summary.overall.passAt1 = 1.5;
    writeFileSync(forged, JSON.stringify(summary));
    oneLine(await runCli(["compare", join(dir, "one"), forged]), "invalid_evaluation");
  });
});
