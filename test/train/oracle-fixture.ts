import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RolloutStack } from "../../src/rollout/stack.js";
import { runRollouts } from "../../src/rollout/runner.js";
import type { RolloutResult } from "../../src/tasks/rollout-result.js";
import { loadSuite } from "../../src/tasks/registry.js";
import { TorchTrainer } from "../../src/trainer/torch/torch-trainer.js";

export interface OracleFixture {
  stack: RolloutStack;
  results: RolloutResult[];
  trainer: TorchTrainer;
  close(): Promise<void>;
}

/**
 * Real rollouts for training tests: the oracle solves `suite` through `harnesses` (bwrap sandboxes, capture proxy,
 * in-memory store), `samples` per task; sample 0 scores 1 and the others `otherScore`, so every group has non-zero
 * GRPO advantages. Plus a real torch worker holding a fresh tiny-1m policy (`trainerSeed`).
 */
export async function openOracleFixture(opts: { suite: string; harnesses: string[]; samples: number; idPrefix: string; otherScore: number; trainerSeed: number }): Promise<OracleFixture> {
  const stack = await RolloutStack.open({ engine: "oracle", store: "memory", sandbox: "bwrap" });
  const tasks = (await loadSuite(opts.suite)).tasks;
  const ran = await runRollouts(stack, { tasks, harnesses: opts.harnesses, samples: opts.samples, idPrefix: opts.idPrefix }, { concurrency: 4 });
  const results = ran.map((r) => ({ ...r, score: r.sample === 0 ? 1 : opts.otherScore }));
  const dir = mkdtempSync(join(tmpdir(), `hrl-${opts.idPrefix}-`));
  const trainer = await TorchTrainer.start({ threads: 1 });
  await trainer.init({ preset: "tiny-1m", seed: opts.trainerSeed, out: join(dir, "m") });
  return {
    stack,
    results,
    trainer,
    async close() {
      await trainer.close();
      await stack.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
