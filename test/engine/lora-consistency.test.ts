import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import { checkConsistency, workerScorer } from "../../src/train/consistency.js";
import { requireCapability } from "../../src/trainer/capabilities.js";
import { createTrainer } from "../../src/trainer/index.js";
import type { LoraTrainer } from "../../src/trainer/types.js";
import { batch, flatRow } from "../trainer/fixtures.js";

// A LoRA policy served by llama.cpp: the worker saves merged weights W + (alpha/r)·B·A, the GGUF export is the
// ordinary one, and the engine's sampling logprobs must match the worker's *adapted* (unmerged) forward pass.
const root = mkdtempSync(join(tmpdir(), "harnessrl-lora-consistency-"));
const cache = join(root, "cache");
let trainer: LoraTrainer;
beforeAll(async () => {
  trainer = requireCapability(await createTrainer("torch", { threads: 1 }), "lora", "this test");
}, 120_000);
afterAll(async () => {
  await trainer.close();
  rmSync(root, { recursive: true, force: true });
});

/** A few SFT steps at a large rate so the adapters (B starts at 0) move the policy well away from its base. */
async function trainAdapters(steps: number): Promise<void> {
  const row = flatRow(Array.from({ length: 40 }, (_, i) => 97 + ((i * 7) % 9)));
  for (let i = 1; i < row.tokens.length; i++) {
    row.trainable[i] = 1;
    row.lossWeights[i] = 1 / (row.tokens.length - 1);
  }
  for (let s = 0; s < steps; s++) {
    await trainer.forwardBackward(batch([row]), { objective: "sft" });
    await trainer.optimStep({ lr: 0.02 });
  }
}

describe("llama.cpp serves a LoRA policy as the worker computes it", () => {
  for (const [modelType, targets] of [["qwen3", undefined], ["qwen2", ["q_proj", "v_proj", "up_proj"]]] as const) {
    it(`merged GGUF vs the adapted worker: max |Δ logprob| ≤ 1e-3 over ≥ 600 tokens (tiny-1m ${modelType}, ${targets ? targets.join("+") : "all projections"})`, async () => {
      const base = join(root, `base-${modelType}`);
      const dir = join(root, `lora-${modelType}`);
      await trainer.init({ preset: "tiny-1m", seed: 11, out: base, modelType });
      const info = await trainer.loraInit({ rank: 8, alpha: 16, baseDir: base, seed: 2, ...(targets ? { targetModules: targets } : {}) });
      expect(info.adapters).toBe(4 * (targets?.length ?? 7));
      await trainAdapters(6);
      await trainer.save(dir, { policyVersion: 1 });
      expect(existsSync(join(dir, "adapter", "adapter_model.safetensors"))).toBe(true);
      const engine = await createEngine(`llamacpp:${dir}?threads=1&sequences=8&cache=${cache}`);
      const baseEngine = await createEngine(`llamacpp:${base}?threads=1&sequences=8&cache=${cache}`);
      try {
        const report = await checkConsistency(engine, workerScorer(trainer), { tokens: 600, temperature: 1 });
        expect(report.tokens).toBeGreaterThanOrEqual(600);
        expect(report.maxAbsDelta).toBeLessThanOrEqual(1e-3);
        // The adapters changed the policy: the unadapted base disagrees with the worker by far more (the check can fail).
        const against = await checkConsistency(baseEngine, workerScorer(trainer), { tokens: 200, temperature: 1 });
        expect(against.maxAbsDelta).toBeGreaterThan(1e-2);
      } finally {
        await engine.close();
        await baseEngine.close();
      }
    }, 300_000);
  }

  it("harnessrl doctor consistency passes on the saved LoRA policy directory", () => {
    const dir = join(root, "lora-qwen3");
    const cli = join(import.meta.dirname, "..", "..", "dist", "cli", "main.js");
    const r = spawnSync(process.execPath, [cli, "doctor", "consistency", "--model", dir, "--tokens", "600", "--json"], { encoding: "utf8", env: { ...process.env, HARNESSRL_CACHE_DIR: cache } });
    expect(r.status, `stderr: ${r.stderr}\nstdout: ${r.stdout}`).toBe(0);
    const report = JSON.parse(r.stdout) as { ok: boolean; tokens: number; maxAbsDelta: number };
    expect(report.ok).toBe(true);
    expect(report.tokens).toBeGreaterThanOrEqual(600);
    expect(report.maxAbsDelta).toBeLessThanOrEqual(1e-3);
  }, 300_000);
});
