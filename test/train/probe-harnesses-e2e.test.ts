import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { buildRunContext } from "../../src/run/context.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import { loadRunConfig } from "../../src/train/config.js";
import { runTraining, type RunSummary } from "../../src/train/orchestrator.js";
import { noiseTask } from "./noise-tasks.js";
import { readRunState, rlRows } from "./run-files.js";

interface Line {
  rolloutId: string;
  harness: string;
  status: string;
}
const jsonl = (path: string): Line[] => readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l) as Line);

/**
 * A scheduled HarnessBandit run (tiny-1m, llama.cpp, bwrap, torch) through chat-agent and resp-agent with claw-agent as
 * a probe harness: each step also runs 1 task × 2 samples through claw-agent, sketches their gradient without applying
 * it, and hands the sketch to the scheduler. Noise tasks (random scores) give non-zero advantages. The run stops after
 * step 1 and is resumed for step 2, so the scheduler's probe state also goes through a restore.
 */
describe("probe harnesses in a scheduled run (tiny preset, 2 steps, resumed between them)", () => {
  let root: string;
  let runDir: string;
  let first: RunSummary;
  let second: RunSummary;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "hrl-probes-"));
    const suite = join(root, "suite");
    await writeNativeSuite([0, 1, 2, 3].map((i) => noiseTask(i, "train")), join(suite, "train"));
    const config = (steps: number): string => {
      const path = join(root, `run-${steps}.yaml`);
      writeFileSync(
        path,
        stringify({
          name: "probes",
          seed: 2,
          model: { preset: "tiny-1m", seed: 3 },
          engine: { kind: "llamacpp", threads: 1, sequences: 4 },
          sampling: { temperature: 1, max_tokens: 16 },
          rollout: { sandbox: "bwrap", concurrency: 4, max_turns: 1, timeout_s: 60, memory_mb: 1024 },
          harnesses: ["chat-agent", "resp-agent"],
          mix: "scheduled",
          scheduler: { name: "harness-bandit", sketch_dim: 256, probe_harnesses: ["claw-agent"], probe_tasks: 1, probe_samples: 2 },
          tasks: { train: `dir:${join(suite, "train")}` },
          algorithm: { lr: 0.01 },
          budget: { steps, tasks_per_step: 2, samples: 2 },
        }),
      );
      return path;
    };
    runDir = join(root, "run");
    first = await runTraining(buildRunContext(loadRunConfig(config(1)), { runDir, configPath: config(1) }), () => undefined);
    second = await runTraining(buildRunContext(loadRunConfig(config(2)), { runDir }), () => undefined);
  }, 600_000);

  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("runs the probe rollouts every step, apart from the trained rollouts", () => {
    expect(first.steps).toBe(1);
    expect(second.steps).toBe(2);
    const trained = jsonl(join(runDir, "rollouts.jsonl"));
    const probes = jsonl(join(runDir, "probes.jsonl"));
    // The trained rollouts: 2 tasks × 2 samples per step, one scheduled training harness each, never the probe.
    expect(trained).toHaveLength(8);
    expect(trained.filter((r) => r.harness === "claw-agent")).toEqual([]);
    for (const step of [1, 2]) expect(new Set(trained.filter((r) => r.rolloutId.startsWith(`s${step}-`)).map((r) => r.harness)).size).toBe(1);
    // The probe rollouts: 1 task × 2 samples through claw-agent per step, none of them among the trained ones.
    expect(probes).toHaveLength(4);
    expect(probes.every((r) => r.harness === "claw-agent")).toBe(true);
    expect(probes.filter((r) => r.rolloutId.startsWith("p1-"))).toHaveLength(2);
    expect(probes.filter((r) => r.rolloutId.startsWith("p2-"))).toHaveLength(2);
    const trainedIds = new Set(trained.map((r) => r.rolloutId));
    expect(probes.filter((r) => trainedIds.has(r.rolloutId))).toEqual([]);
    expect(readRunState(runDir).probesBytes).toBe(readFileSync(join(runDir, "probes.jsonl")).length);
  });

  it("logs the probes in metrics: their reward, their gradient (sketched, not trained), and the step's trained tokens apart", () => {
    const rows = rlRows(runDir);
    expect(rows.map((r) => r.step)).toEqual([1, 2]);
    for (const r of rows) {
      expect(r["probe/rollouts"]).toBe(2);
      expect(r["probe/rollouts/claw-agent"]).toBe(2);
      expect(typeof r["probe/reward/claw-agent"]).toBe("number");
      expect(r["probe/skipped/claw-agent"]).toBe(0);
      expect(r["probe/grad_norm/claw-agent"] as number).toBeGreaterThan(0);
      expect(r["probe/tokens/claw-agent"] as number).toBeGreaterThan(0);
      // The step trained only its own harness's rollouts (the probe's tokens are counted apart).
      expect(r["train/skipped"]).toBe(0);
      expect(r["tokens/trainable"] as number).toBeGreaterThan(0);
      expect(r["sched/visits/claw-agent"]).toBeUndefined();
    }
  });

  it("hands the probe's sketch to the scheduler: cosines to it in the log, its sketch EMA in the resumable state", () => {
    const rows = rlRows(runDir);
    for (const [i, r] of rows.entries()) {
      expect(r["bandit/probe_visits/claw-agent"]).toBe(i + 1); // step 2's count continues the restored state
      expect(r["bandit/probe_peers"]).toBe(1);
      const picked = ["chat-agent", "resp-agent"].find((h) => r[`sched/pick/${h}`] === 1);
      expect(picked).toBeDefined();
      const cos = r[`bandit/probe_cos/${picked}/claw-agent`] as number;
      expect(cos).toBeGreaterThanOrEqual(-1);
      expect(cos).toBeLessThanOrEqual(1);
      expect(r[`bandit/transfer_probe/${picked}`]).toBeCloseTo(cos, 12);
    }
    const scheduler = readRunState(runDir).scheduler as { probes: { harness: string; sketch_ema: number[] | null; observations: number }[] };
    expect(scheduler.probes).toHaveLength(1);
    expect(scheduler.probes[0]).toMatchObject({ harness: "claw-agent", observations: 2 });
    expect(scheduler.probes[0]?.sketch_ema).toHaveLength(256);
    expect(existsSync(join(runDir, "checkpoints"))).toBe(true);
  });
});
