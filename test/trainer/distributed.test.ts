import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EngineError } from "../../src/core/errors.js";
import { createTrainer } from "../../src/trainer/index.js";
import { WorkerClient } from "../../src/trainer/worker-client.js";
import { trainerContracts } from "./contract.js";

// The whole trainer contract (core and every capability) against rank 0 of two gloo ranks, one thread each.
trainerContracts("torch, 2 gloo ranks", () => createTrainer("torch", { threads: 1, distributed: { worldSize: 2 } }), ["critic", "capo", "grad_sketch", "lora"]);

function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
}

describe("torch trainer with 2 ranks", () => {
  it("fails the step with trainer_rank_failed when a rank is killed, and keeps refusing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "harnessrl-rank-kill-"));
    const { client } = await WorkerClient.start({ threads: 1, distributed: { worldSize: 2 } });
    try {
      await client.request("init", { preset: "tiny-1m", seed: 1, out: join(dir, "m") });
      const [rank1] = childrenOf(client.pid ?? 0);
      expect(rank1).toBeGreaterThan(0);
      process.kill(rank1 as number, "SIGKILL");
      const err = await client.request("optim_step", { lr: 1e-3 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EngineError);
      expect(err).toMatchObject({ code: "trainer_rank_failed", retryable: false });
      expect(String((err as Error).message)).toMatch(/restart the trainer and load the last checkpoint/);
      await expect(client.request("info", {})).rejects.toMatchObject({ code: "trainer_rank_failed" });
    } finally {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
