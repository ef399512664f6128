import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { writeNativeSuite } from "../../src/tasks/layout-native.js";
import { loadRunConfig } from "../../src/train/config.js";
import { buildRunContext } from "../../src/run/context.js";
import { runTraining, type RunSummary } from "../../src/train/orchestrator.js";
import { noiseTask } from "./noise-tasks.js";
import { tempDirs } from "../temp-dirs.js";

const tempDir = tempDirs();

/**
 * A run with `model.lora`: the whole pipeline (sandboxed harness → proxy → llama.cpp on merged weights → trees →
 * advantages → adapter-only updates → merged save → GGUF hot swap), with the KL reference loading a merged policy, and
 * a resume from a LoRA checkpoint (the adapters come back on their recorded base). Rewards are noise (plumbing only).
 */

interface Metric {
  phase: string;
  step: number;
  "mismatch/max_abs": number;
  "train/skipped": number;
  "tokens/trainable": number;
}

function metrics(runDir: string): Metric[] {
  return readFileSync(join(runDir, "metrics.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as Metric);
}

describe("training with model.lora end to end (tiny-1m, CPU, bwrap, llama.cpp, torch)", () => {
  let runDir: string;
  let first: RunSummary;
  let resumed: RunSummary;

  beforeAll(async () => {
    const root = tempDir("hrl-lora-e2e-");
    const suite = join(root, "suite");
    await writeNativeSuite([0, 1, 2].map((i) => noiseTask(i, "train")), join(suite, "train"));
    await writeNativeSuite([0, 1].map((i) => noiseTask(i, "test")), join(suite, "test"));
    const config = (steps: number): Record<string, unknown> => ({
      name: "lora-e2e",
      seed: 1,
      model: { preset: "tiny-1m", seed: 3, lora: { rank: 4, alpha: 8 } },
      engine: { kind: "llamacpp", threads: 1, sequences: 8 },
      sampling: { temperature: 1, max_tokens: 24 },
      rollout: { sandbox: "bwrap", concurrency: 4, max_turns: 2, timeout_s: 60, memory_mb: 1024 },
      harnesses: ["chat-agent"],
      tasks: { train: `dir:${join(suite, "train")}` },
      // A large rate so that two steps move the adapters far enough for a merged/adapted mismatch to show.
      algorithm: { lr: 0.05, kl_coef: 0.1 },
      budget: { steps, tasks_per_step: 2, samples: 3 },
      eval: { tasks: `dir:${join(suite, "test")}`, before: false, after: true },
    });
    runDir = join(root, "run");
    const run = async (steps: number): Promise<RunSummary> => {
      const path = join(root, `run-${steps}.yaml`);
      writeFileSync(path, stringify(config(steps)));
      return runTraining(buildRunContext(loadRunConfig(path), { runDir, configPath: path }), () => undefined);
    };
    first = await run(2);
    // The same run with one more planned step resumes from step 2's LoRA checkpoint.
    resumed = await run(3);
  }, 900_000);

  it("trains every step on the adapters and serves each version with the worker's own logprobs", () => {
    expect([first.steps, resumed.steps, resumed.policyVersion]).toEqual([2, 3, 3]);
    const rl = metrics(runDir).filter((m) => m.phase === "rl");
    expect(rl.map((m) => m.step)).toEqual([1, 2, 3]);
    for (const m of rl) {
      expect(m["train/skipped"]).toBe(0);
      expect(m["tokens/trainable"]).toBeGreaterThan(0);
      // Steps 2 and 3 sample from merged GGUFs of adapted policies (B ≠ 0); the worker scores with its adapters.
      expect(m["mismatch/max_abs"]).toBeLessThan(1e-3);
    }
  });

  it("saves merged policy versions with a PEFT adapter beside them, and checkpoints that refer to the base", () => {
    const policy = (v: number, f: string): string => join(runDir, "policy", `v000${v}`, f);
    expect(existsSync(policy(0, "adapter"))).toBe(false); // v0 is the base itself
    const adapter = JSON.parse(readFileSync(policy(3, "adapter/adapter_config.json"), "utf8")) as Record<string, unknown>;
    expect(adapter).toMatchObject({ peft_type: "LORA", r: 4, lora_alpha: 8, base_model_name_or_path: join(runDir, "policy", "v0000") });
    expect(readFileSync(policy(0, "model.safetensors")).equals(readFileSync(policy(3, "model.safetensors")))).toBe(false);
    const state = JSON.parse(readFileSync(join(runDir, "state.json"), "utf8")) as { checkpoint: string };
    const trainerState = JSON.parse(readFileSync(join(state.checkpoint, "trainer_state.json"), "utf8")) as { optimizer_steps: number; lora: { base_dir: string; rank: number }; param_groups: { params: string[] }[] };
    expect(trainerState.lora).toMatchObject({ rank: 4, base_dir: join(runDir, "policy", "v0000") });
    expect(trainerState.optimizer_steps).toBe(3);
    const names = trainerState.param_groups.flatMap((g) => g.params);
    expect(names.length).toBe(4 * 7 * 2);
    expect(names.every((n) => n.includes(".lora_"))).toBe(true);
  });
});
