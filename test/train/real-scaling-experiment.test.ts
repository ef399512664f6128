import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { tempDirs } from "../temp-dirs.js";

/**
 * The real-CLI harness-scaling experiment (experiments/real-harness-scaling/, issue 24) at its CI size, so the script
 * cannot rot: one shared oracle warm start through pi and Codex (a fresh `qwen3-tiny`, Qwen3 tokenizer, llama.cpp,
 * bwrap, torch), evaluated once; then two arms from its checkpoint at the same rollout budget (1 step: pi alone, and
 * pi + Codex mixed), each evaluated on both training harnesses and a held-out one; then the results table. Also checks
 * that every config of the full-size experiment validates.
 */

const tempDir = tempDirs();
const root = join(import.meta.dirname, "..", "..");
const RUN = join(root, "experiments", "real-harness-scaling", "run.mjs");
const TABLE = join(root, "experiments", "real-harness-scaling", "table.mjs");

const json = <T>(path: string): T => JSON.parse(readFileSync(path, "utf8")) as T;
const jsonl = <T>(path: string): T[] => readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l) as T);
const node = (args: string[], timeoutMs: number): { status: number | null; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, args, { cwd: root, encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};

interface EvalFile {
  byHarness: Record<string, { groupRates: Record<string, number> } | undefined>;
}
interface Summary {
  steps: number;
  warmStart?: { demoRollouts: number; steps: number };
}

describe("the real-CLI harness-scaling experiment at CI size (pi and Codex trained, chat-agent held out)", () => {
  let dir: string;
  let first: ReturnType<typeof node>;

  beforeAll(() => {
    dir = tempDir("real-scaling-ci-");
    first = node([RUN, "--scale", "ci", "--seeds", "0", "--root", dir], 20 * 60_000);
  }, 21 * 60_000);

  it("runs the shared warm start and both arms to their end", () => {
    expect(first.status, `${first.stdout.slice(-4000)}\n${first.stderr.slice(-4000)}`).toBe(0);
    for (const run of ["warm", "one", "two"]) expect(existsSync(join(dir, "s0", run, "summary.json")), run).toBe(true);
  });

  it("warm-starts once through every training harness and evaluates that policy once, on every harness", () => {
    const warm = json<Summary>(join(dir, "s0", "warm", "summary.json"));
    expect(warm.warmStart?.demoRollouts).toBe(2);
    expect(warm.steps).toBe(0);
    const before = json<EvalFile>(join(dir, "s0", "warm", "eval-before.json"));
    for (const h of ["pi", "codex", "chat-agent"]) expect(Object.keys(before.byHarness[h]?.groupRates ?? {}), h).toHaveLength(1);
  });

  it("starts both arms from the warm start's checkpoint and gives them the same rollout budget", () => {
    const warmCheckpoint = join(dir, "s0", "warm", "checkpoints", "step-0000");
    expect(existsSync(warmCheckpoint)).toBe(true);
    const budget: Record<string, number> = {};
    for (const arm of ["one", "two"]) {
      const config = parseYaml(readFileSync(configPath(dir, arm), "utf8")) as { model: { checkpoint: string } };
      expect(config.model.checkpoint).toBe(warmCheckpoint);
      expect(json<Summary>(join(dir, "s0", arm, "summary.json")).steps).toBe(1);
      budget[arm] = jsonl(join(dir, "s0", arm, "rollouts.jsonl")).length;
      const after = json<EvalFile>(join(dir, "s0", arm, "eval-after.json"));
      for (const h of ["pi", "codex", "chat-agent"]) expect(Object.keys(after.byHarness[h]?.groupRates ?? {}), `${arm} ${h}`).toHaveLength(1);
    }
    expect(budget).toEqual({ one: 4, two: 4 });
    // Which harnesses each arm's step sampled through: pi alone, then pi and Codex (and never the held-out one).
    const sampled = (arm: string): string[] => {
      const rows = jsonl<Record<string, unknown>>(join(dir, "s0", arm, "metrics.jsonl")).filter((m) => m.phase === "rl");
      return ["pi", "codex", "chat-agent"].filter((h) => rows.some((m) => typeof m[`pass1/${h}`] === "number"));
    };
    expect(sampled("one")).toEqual(["pi"]);
    expect(sampled("two")).toEqual(["pi", "codex"]);
  });

  it("skips finished runs when run again, and tabulates the arms with paired changes", () => {
    const again = node([RUN, "--scale", "ci", "--seeds", "0", "--root", dir], 120_000);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout.match(/done before, skipped/g)).toHaveLength(3);
    const table = node([TABLE, "--root", dir], 60_000);
    expect(table.status, table.stderr).toBe(0);
    const t = json<{ rows: { arm: string; seeds: number[] }[]; questions: { a: string; b: string; change: { n: number } }[] }>(join(dir, "table.json"));
    expect(t.rows.map((r) => [r.arm, r.seeds])).toEqual([
      ["one", [0]],
      ["two", [0]],
    ]);
    expect(t.questions.find((q) => q.a === "two" && q.b === "one")?.change.n).toBe(1);
    expect(table.stdout).toContain("chat-agent (held out)");
  }, 300_000);

  // One seed: the seeds' configs differ only in their seed numbers, and each check is a CLI start (~7 s under load).
  it("validates every config of the full-size experiment (the warm start and 7 arms) without running them", () => {
    const check = node([RUN, "--check", "--seeds", "0", "--root", tempDir("real-scaling-full-")], 540_000);
    expect(check.status, check.stderr).toBe(0);
    const ok = check.stdout.split("\n").filter((l) => l.startsWith("OK "));
    expect(ok).toHaveLength(8);
    expect(check.stdout).toContain("probes: openclaw");
  }, 600_000);
});

describe("the experiment's configs for rollout nodes (no run: --check only)", () => {
  it("writes configs for rollout nodes with --cluster (the probe arm included) that validate, and refuses half a cluster", () => {
    const dir = tempDir("real-scaling-cluster-");
    const flags = ["--cluster", "redis://:secret@10.0.0.1:6379", "--store", "postgres://u:pw@10.0.0.1/runs", "--engine-url", "http://10.0.0.5:8500", "--engines", "llamacpp-http:http://10.0.0.5:8500,llamacpp-http:http://10.0.0.6:8500"];
    const check = node([RUN, "--check", "--seeds", "0", "--arms", "four-bandit-probe", "--root", dir, ...flags], 300_000);
    expect(check.status, check.stderr).toBe(0);
    expect(check.stdout.split("\n").filter((l) => l.startsWith("OK "))).toHaveLength(2);
    for (const name of ["warm", "four-bandit-probe"]) {
      const config = parseYaml(readFileSync(join(dir, "configs", `real-scaling-${name}-s0.yaml`), "utf8")) as Record<string, unknown>;
      expect(config["engine"]).toEqual({ kind: "llamacpp-http", url: "http://10.0.0.5:8500" });
      expect(config["cluster"]).toEqual({ queue: "redis://:secret@10.0.0.1:6379", store: "postgres://u:pw@10.0.0.1/runs", engines: ["llamacpp-http:http://10.0.0.5:8500", "llamacpp-http:http://10.0.0.6:8500"], attempts: 3 });
    }
    const half = node([RUN, "--check", "--root", dir, "--cluster", "redis://10.0.0.1:6379"], 60_000);
    expect(half.status).toBe(1);
    expect(half.stderr).toMatch(/--cluster needs --store .* and --engine-url/);
  }, 360_000);
});

/** The config run.mjs wrote for an arm of seed 0 (a comment line, then JSON: YAML). */
function configPath(dir: string, arm: string): string {
  return join(dir, "configs", `real-scaling-${arm}-s0.yaml`);
}
