import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { buildRunContext } from "../../src/run/context.js";
import { loadRunConfig, parseRunConfig } from "../../src/train/config.js";
import { runTraining, type RunSummary } from "../../src/train/orchestrator.js";
import { tempDirs } from "../temp-dirs.js";
import { tinyWarmStartRun } from "./tiny-warm-start.js";

const tempDir = tempDirs();

const TARGET = 0.5;
const EVERY = 8;
const FROM = 1e-10;

const base = tinyWarmStartRun("pass-rate-stop", 128);

/**
 * `warm_start.stop_at_pass_rate` on a real warm start: oracle demonstrations through a built-in harness in bwrap
 * sandboxes, SFT in the torch worker, and held-in checks that serve each snapshot on llama.cpp and run the harness
 * against it. The held-in tasks are the four demonstrated ones, so the policy gets there in a few dozen steps.
 */
describe("a warm start stopped by the policy's own held-in pass rate", () => {
  let dir: string;
  let summary: RunSummary;
  let lines: string[];

  beforeAll(async () => {
    const root = tempDir("hrl-pass-rate-stop-");
    const path = join(root, "stop.yaml");
    writeFileSync(
      path,
      stringify({
        ...base,
        warm_start: { demos: "calcrun:train?n=4&seed=2", epochs: 60, max_epochs: 200, lr: 0.01, batch_tokens: 4096, stop_at_pass_rate: { target: TARGET, tasks: "calcrun:train?n=4&seed=2", every_steps: EVERY, from_demo_prob: FROM } },
      }),
    );
    dir = join(root, "run");
    lines = [];
    summary = await runTraining(buildRunContext(loadRunConfig(path), { runDir: dir, configPath: path }), (l) => lines.push(l));
  }, 900_000);

  it("checks only once the reproduction probability passes the gate, then every few steps, and stops at the first check at the target", () => {
    const w = summary.warmStart!;
    expect(w).toMatchObject({ reachedTargetPassRate: true, reachedTargetDemoProb: false, reachedTargetNll: false, missedTarget: false, timeCapped: false });
    const checks = w.passChecks;
    expect(checks.length).toBeGreaterThan(0);
    expect(checks[checks.length - 1]!.passRate).toBeGreaterThanOrEqual(TARGET);
    for (const c of checks.slice(0, -1)) expect(c.passRate).toBeLessThan(TARGET);
    for (const c of checks) expect(c.rollouts).toBe(4);
    for (let i = 1; i < checks.length; i++) expect(checks[i]!.step - checks[i - 1]!.step).toBe(EVERY);
    // SFT ended at the last check.
    expect(w.steps).toBe(checks[checks.length - 1]!.step);
    expect(w.checkMs).toBe(checks.reduce((a, c) => a + c.ms, 0));

    const rows = readFileSync(join(dir, "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, number | string>);
    const sft = rows.filter((r) => r.phase === "sft");
    expect(sft.length).toBe(w.steps);
    // The curve carries each check on its step, and nothing on the others.
    const checked = sft.filter((r) => r["sft/held_in_pass1"] !== undefined);
    expect(checked.map((r) => [r.optimizer_step, r["sft/held_in_pass1"]])).toEqual(checks.map((c) => [c.step, c.passRate]));
    // The first check came at the first step whose reproduction probability reached the gate.
    const gate = sft.find((r) => typeof r["sft/demo_prob"] === "number" && (r["sft/demo_prob"] as number) >= FROM);
    expect(gate?.optimizer_step).toBe(checks[0]!.step);
    expect(lines.filter((l) => /^warm start: held-in pass@1 [\d.]+% after \d+ SFT steps \(4 rollouts/.test(l))).toHaveLength(checks.length);
    expect(lines.some((l) => l.startsWith(`warm start: held-in pass@1 reached stop_at_pass_rate ${TARGET} after ${w.steps} of`))).toBe(true);
    // The last check's snapshot stays beside the run's policies, and the warm start's policy (saved after it) is complete.
    for (const name of ["config.json", "tokenizer.json", "model.safetensors"]) {
      expect(existsSync(join(dir, "sft-check-policy", name))).toBe(true);
      expect(existsSync(join(dir, "policy", "v0001", name))).toBe(true);
    }
  });
});

describe("stop_at_pass_rate's config", () => {
  const warm = { demos: "calcrun:train?n=4&seed=2", epochs: 2, lr: 0.01 };
  it("rejects the held-out evaluation's tasks as the stop's tasks", () => {
    expect(() => parseRunConfig({ ...base, eval: { tasks: "calcrun:test?n=8&seed=3" }, warm_start: { ...warm, stop_at_pass_rate: { target: 0.3, tasks: "calcrun:test?n=8&seed=3" } } })).toThrow(/held-out evaluation's tasks would decide where the warm start stops/);
  });
  it("fills its check schedule's defaults and lets max_epochs extend SFT towards it", () => {
    const c = parseRunConfig({ ...base, warm_start: { ...warm, max_epochs: 4, stop_at_pass_rate: { target: 0.3, tasks: "calcrun:train?n=8&seed=4" } } });
    expect(c.warm_start?.stop_at_pass_rate).toEqual({ target: 0.3, tasks: "calcrun:train?n=8&seed=4", every_steps: 6, from_demo_prob: 0.03 });
  });
  it("rejects a target outside (0, 1]", () => {
    expect(() => parseRunConfig({ ...base, warm_start: { ...warm, stop_at_pass_rate: { target: 0, tasks: "calcrun:train?n=8&seed=4" } } })).toThrow(/target/);
    expect(() => parseRunConfig({ ...base, warm_start: { ...warm, stop_at_pass_rate: { target: 1.5, tasks: "calcrun:train?n=8&seed=4" } } })).toThrow(/target/);
  });
});
