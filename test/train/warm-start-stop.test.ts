import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { buildRunContext } from "../../src/run/context.js";
import { loadRunConfig } from "../../src/train/config.js";
import { runTraining, type RunSummary } from "../../src/train/orchestrator.js";
import { tempDirs } from "../temp-dirs.js";
import { tinyWarmStartRun } from "./tiny-warm-start.js";

const tempDir = tempDirs();

/**
 * `warm_start.stop_at_demo_prob` on a real warm start (oracle demonstrations through a built-in harness in bwrap
 * sandboxes, SFT in the torch worker): the target is reached long before the 100 planned epochs, and SFT stops at the
 * first step whose reproduction probability reaches it.
 */
describe("a warm start stopped by the demonstrations' reproduction probability", () => {
  // A tiny target on purpose: the four demonstrations' reproduction probability climbs from ~1e-230 at step 1 through
  // ~1e-100 by step ~35 to 0.3 only after ~120 steps (measured with this config), and the test is about where SFT
  // stops, not how strong the policy gets.
  const TARGET = 1e-100;
  let dir: string;
  let path: string;
  let summary: RunSummary;

  beforeAll(async () => {
    const root = tempDir("hrl-demo-prob-stop-");
    path = join(root, "stop.yaml");
    writeFileSync(
      path,
      stringify({
        ...tinyWarmStartRun("demo-prob-stop", 24),
        warm_start: { demos: "calcrun:train?n=4&seed=2", epochs: 100, lr: 0.01, batch_tokens: 4096, stop_at_demo_prob: TARGET },
      }),
    );
    dir = join(root, "run");
    summary = await runTraining(buildRunContext(loadRunConfig(path), { runDir: dir, configPath: path }), () => undefined);
  }, 600_000);

  it("stops at the first step at or above the target, says so, and is not reported as time-capped", () => {
    const rows = readFileSync(join(dir, "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, number | string>);
    const probs = rows.filter((r) => r.phase === "sft").map((r) => r["sft/demo_prob"]).filter((p): p is number => typeof p === "number");
    expect(probs.length).toBeGreaterThan(0);
    expect(probs[probs.length - 1]).toBeGreaterThanOrEqual(TARGET);
    for (const p of probs.slice(0, -1)) expect(p).toBeLessThan(TARGET);
    const w = summary.warmStart;
    expect(w).toMatchObject({ reachedTargetDemoProb: true, reachedTargetNll: false, timeCapped: false, finalDemoProb: probs[probs.length - 1] });
    expect(w!.steps).toBeLessThan(w!.plannedSteps);
    // The calls' openings are charted beside it on the same steps, and are likelier than whole demonstrations here.
    const openings = rows.filter((r) => r.phase === "sft" && typeof r["sft/demo_prob"] === "number").map((r) => r["sft/demo_opening_prob"]);
    expect(openings).toHaveLength(probs.length);
    for (const [k, o] of openings.entries()) expect(o as number).toBeGreaterThanOrEqual(probs[k] as number);
    expect(w!.finalDemoOpeningProb).toBe(openings[openings.length - 1]);
    expect(w!.finalDemoOpeningProb).toBeLessThanOrEqual(1);
  });

  it("with max_epochs, SFT goes on past its scheduled epochs until the target is reached, and says so", async () => {
    // The same run with one scheduled epoch (a few steps): the target is only reached in the epochs max_epochs adds.
    const config = loadRunConfig(path);
    const ws = { ...config.warm_start!, epochs: 1, max_epochs: 100 };
    const lines: string[] = [];
    const extended = await runTraining(buildRunContext({ ...config, warm_start: ws }, { runDir: join(dir, "..", "extended"), configPath: path }), (l) => lines.push(l));
    const w = extended.warmStart!;
    expect(w.plannedSteps * 100).toBe(summary.warmStart!.plannedSteps);
    expect(w.steps).toBeGreaterThan(w.plannedSteps);
    expect(w.epochs).toBeGreaterThan(1);
    expect(w).toMatchObject({ reachedTargetDemoProb: true, missedTarget: false, timeCapped: false });
    expect(w.finalDemoProb).toBeGreaterThanOrEqual(TARGET);
    expect(lines.some((l) => /planned SFT steps ended without reaching the target.*going on, up to max_epochs 100/.test(l))).toBe(true);
  }, 600_000);

  it("a warm start whose max_epochs run out before the target is reported as having missed it", async () => {
    const config = loadRunConfig(path);
    const ws = { ...config.warm_start!, epochs: 1, max_epochs: 2, stop_at_demo_prob: 0.999 };
    const lines: string[] = [];
    const missed = await runTraining(buildRunContext({ ...config, warm_start: ws }, { runDir: join(dir, "..", "missed"), configPath: path }), (l) => lines.push(l));
    const w = missed.warmStart!;
    expect(w).toMatchObject({ epochs: 2, steps: 2 * w.plannedSteps, reachedTargetDemoProb: false, reachedTargetNll: false, missedTarget: true, timeCapped: false });
    expect(lines.some((l) => /WARNING: SFT ended after \d+ steps \(2 epochs\) without reaching its target/.test(l))).toBe(true);
  }, 600_000);

  it("a warm start rerun in a run directory that still holds an interrupted attempt's demonstrations trains on each once", async () => {
    // What an interrupted warm start leaves behind: its demonstrations' calls, recorded under the same rollout ids the
    // rerun uses. Trained on twice before the fix (twice the tokens, twice the planned steps).
    const again = join(dir, "..", "rerun");
    mkdirSync(again);
    copyFileSync(join(dir, "demos.sqlite"), join(again, "demos.sqlite"));
    const rerun = await runTraining(buildRunContext(loadRunConfig(path), { runDir: again, configPath: path }), () => undefined);
    expect(rerun.warmStart).toMatchObject({ demoRollouts: summary.warmStart!.demoRollouts, trainableTokens: summary.warmStart!.trainableTokens, plannedSteps: summary.warmStart!.plannedSteps });
  }, 600_000);
});
