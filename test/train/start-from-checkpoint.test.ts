import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { PROGRESS_FILE, readProgressFile } from "../../src/core/progress-file.js";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import { loadRunConfig } from "../../src/train/config.js";
import { buildRunContext } from "../../src/run/context.js";
import { runTraining, type RunSummary } from "../../src/train/orchestrator.js";
import { noiseTask } from "./noise-tasks.js";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();

const common = {
  seed: 2,
  engine: { kind: "llamacpp", threads: 1, sequences: 4 },
  sampling: { temperature: 1, max_tokens: 24 },
  rollout: { sandbox: "bwrap", concurrency: 4, max_turns: 2, timeout_s: 60, memory_mb: 1024 },
  harnesses: ["chat-agent"],
};

/** A safetensors file's tensor data (the header's metadata carries the policy version, which differs by design). */
function tensorData(path: string): Buffer {
  const bytes = readFileSync(path);
  return bytes.subarray(8 + Number(bytes.readBigUInt64LE(0)));
}

function trainerState(checkpoint: string): { optimizer_steps: number } {
  return JSON.parse(readFileSync(join(checkpoint, "trainer_state.json"), "utf8")) as { optimizer_steps: number };
}

describe("a warm start ends in a checkpoint that resumes and that other runs start from", () => {
  let warmDir: string;
  let fromDir: string;
  let fromSummary: RunSummary;
  let warmSummary: RunSummary;
  /** The work each run reported in its progress.json while it ran (labels, sampled every 20 ms). */
  const seen = { warm: new Set<string>(), from: new Set<string>() };
  const watch = (dir: string, into: Set<string>): NodeJS.Timeout =>
    setInterval(() => {
      for (const t of readProgressFile(join(dir, PROGRESS_FILE))?.tasks ?? []) into.add(t.label);
    }, 20);

  beforeAll(async () => {
    const root = tempDir("hrl-ckpt-start-");
    const suite = join(root, "suite");
    await writeNativeSuite([0, 1].map((i) => noiseTask(i, "train")), suite);
    const write = (name: string, config: object): string => {
      const path = join(root, `${name}.yaml`);
      writeFileSync(path, stringify({ name, ...common, tasks: { train: `dir:${suite}` }, ...config }));
      return path;
    };
    // Run 1: SFT on two oracle demonstrations, no RL.
    const warmConfig = write("warm", {
      model: { preset: "tiny-1m", seed: 5 },
      warm_start: { demos: "calcfile:train?n=2&seed=4", epochs: 2, lr: 0.003, batch_tokens: 2048 },
      budget: { steps: 0, tasks_per_step: 2, samples: 2 },
    });
    warmDir = join(root, "warm");
    const warmWatch = watch(warmDir, seen.warm);
    warmSummary = await runTraining(buildRunContext(loadRunConfig(warmConfig), { runDir: warmDir, configPath: warmConfig }), () => undefined).finally(() => clearInterval(warmWatch));
    // Run 2: two GRPO steps (with a KL penalty to the starting policy) from run 1's warm-start checkpoint.
    const fromConfig = write("from", {
      model: { checkpoint: join(warmDir, "checkpoints", "step-0000") },
      algorithm: { lr: 0.001, kl_coef: 0.1 },
      budget: { steps: 2, tasks_per_step: 2, samples: 2 },
    });
    fromDir = join(root, "from");
    const fromWatch = watch(fromDir, seen.from);
    fromSummary = await runTraining(buildRunContext(loadRunConfig(fromConfig), { runDir: fromDir, configPath: fromConfig }), () => undefined).finally(() => clearInterval(fromWatch));
  }, 600_000);

  it("records the warm-start checkpoint, optimizer state included, as the run's resume point", () => {
    const state = JSON.parse(readFileSync(join(warmDir, "state.json"), "utf8")) as { warmStartDone: boolean; checkpoint: string | null; policyVersion: number };
    expect(state.warmStartDone).toBe(true);
    expect(state.policyVersion).toBe(1);
    expect(state.checkpoint).toBe(join(warmDir, "checkpoints", "step-0000"));
    const rows = readFileSync(join(warmDir, "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Record<string, number | string>);
    const sft = rows.find((r) => r.phase === "warm_start") as { steps: number; finalNll: number; finalDemoProb: number | null };
    expect(sft.steps).toBeGreaterThan(0);
    // Every SFT optimizer step is a metrics row before the summary (the report charts the warm start's curve).
    const curve = rows.filter((r) => r.phase === "sft");
    expect(curve.map((r) => r.optimizer_step)).toEqual(Array.from({ length: sft.steps }, (_, i) => i + 1));
    expect(rows.indexOf(curve[curve.length - 1]!)).toBeLessThan(rows.findIndex((r) => r.phase === "warm_start"));
    expect(curve[curve.length - 1]?.["sft/nll"]).toBe(sft.finalNll);
    for (const r of curve) expect(r["sft/lr"]).toBeGreaterThan(0);
    // Once every demonstration has been trained on (the first epoch's last step), each step also says how likely the
    // policy is to reproduce the demonstrations; the summary keeps the last figure.
    const firstEpoch = curve.filter((r) => r.epoch === 1);
    expect(firstEpoch.slice(0, -1).every((r) => r["sft/demo_prob"] === undefined)).toBe(true);
    const probs = curve.slice(firstEpoch.length - 1).map((r) => r["sft/demo_prob"] as number);
    for (const p of probs) expect(p >= 0 && p <= 1).toBe(true);
    expect(sft.finalDemoProb).toBe(probs[probs.length - 1]);
    expect(trainerState(join(warmDir, "checkpoints", "step-0000")).optimizer_steps).toBe(sft.steps);
    // Without max_seconds every planned SFT step runs, and the summary says so and where the time went.
    expect(warmSummary.warmStart).toMatchObject({ steps: sft.steps, plannedSteps: sft.steps, timeCapped: false });
    expect(warmSummary.timing.warmStart).toBeGreaterThan(0);
  });

  it("reports its long work in progress.json while it runs (demonstrations, SFT; the RL steps and each step's rollouts), and nothing left once done", () => {
    expect([...seen.warm]).toEqual(expect.arrayContaining(["demos", "sft"]));
    expect([...seen.from]).toEqual(expect.arrayContaining(["train", "step 1 rollouts", "step 2 rollouts"]));
    for (const dir of [warmDir, fromDir]) expect(readProgressFile(join(dir, PROGRESS_FILE))?.tasks).toEqual([]);
  });

  it("starts another run from that checkpoint with its weights and its optimizer's moments", () => {
    expect(fromSummary.steps).toBe(2);
    // The new run's policy v0 is the warm-started policy, bit for bit.
    const warmWeights = tensorData(join(warmDir, "policy", "v0001", "model.safetensors"));
    expect(tensorData(join(fromDir, "policy", "v0000", "model.safetensors")).equals(warmWeights)).toBe(true);
    // AdamW continued: its step count carries on from the SFT steps instead of restarting at 1.
    const warmSteps = trainerState(join(warmDir, "checkpoints", "step-0000")).optimizer_steps;
    expect(existsSync(join(fromDir, "checkpoints", "step-0002"))).toBe(true);
    expect(trainerState(join(fromDir, "checkpoints", "step-0002")).optimizer_steps).toBe(warmSteps + 2);
  });

  it("regularises towards the policy it started from: KL 0 at the first step, positive once the policy moved", () => {
    const state = JSON.parse(readFileSync(join(fromDir, "state.json"), "utf8")) as { referenceVersion?: number };
    expect(state.referenceVersion).toBe(0);
    expect(existsSync(join(fromDir, "policy", "v0000", "model.safetensors"))).toBe(true);
    const rl = readFileSync(join(fromDir, "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { phase: string; "kl/ref"?: number }).filter((m) => m.phase === "rl");
    expect(rl).toHaveLength(2);
    // Step 1 trains the reference itself (two workers, same weights: float noise only); step 2 a policy one update away.
    expect(rl[0]?.["kl/ref"]).toBeLessThan(1e-6);
    expect(rl[1]?.["kl/ref"]).toBeGreaterThan(1e-6);
    expect(rl[1]?.["kl/ref"]).toBeLessThan(0.5);
  });
});
