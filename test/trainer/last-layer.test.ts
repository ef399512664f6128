import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { packBatch } from "../../src/trainer/batch-frames.js";
import { WorkerClient } from "../../src/trainer/worker-client.js";
import { batch, branchingPaths, treeRow } from "./fixtures.js";

/**
 * The worker runs its last layer only where scored tokens read it; `fullLastLayer` (`--full-last-layer`) and
 * HARNESSRL_FULL_LAST_LAYER=1 restore the full layer. Both must give the same step: the switch changes the work only.
 */
describe("last-layer pruning switch of the torch worker", () => {
  it("gives the same SFT step, scored logprobs and gradient with the full last layer (flag and env)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "harnessrl-lastlayer-"));
    const { row } = treeRow(branchingPaths());
    // Trainable: every branch token after the shared 26-token prompt, as in a GRPO group's row.
    row.parent.forEach((p, i) => {
      if (p >= 0 && (row.positions[i] ?? 0) >= 26) row.trainable[i] = 1;
    });
    const trainable = row.trainable.reduce((a, b) => a + b, 0);
    row.trainable.forEach((t, i) => (row.lossWeights[i] = t / trainable));
    const { rowLengths, frames } = packBatch(batch([row]), ["tokens", "parent", "positions", "trainable", "lossWeights"]);
    const scoring = packBatch(batch([row]), ["tokens", "parent", "positions", "trainable"]).frames;
    const runs: { loss: number; fb: Float32Array; scored: Float32Array; gradNorm: number; pruned: unknown }[] = [];
    const layouts = [{ threads: 1 }, { threads: 1, fullLastLayer: true }, { threads: 1, env: { HARNESSRL_FULL_LAST_LAYER: "1" } }];
    try {
      for (const [k, layout] of layouts.entries()) {
        const saved = process.env.HARNESSRL_FULL_LAST_LAYER;
        if (layout.env) process.env.HARNESSRL_FULL_LAST_LAYER = layout.env.HARNESSRL_FULL_LAST_LAYER;
        const started = await WorkerClient.start({ threads: layout.threads, ...(layout.fullLastLayer ? { fullLastLayer: true } : {}) }).finally(() => {
          if (saved === undefined) delete process.env.HARNESSRL_FULL_LAST_LAYER;
          else process.env.HARNESSRL_FULL_LAST_LAYER = saved;
        });
        const { client } = started;
        try {
          await client.request("init", { preset: "tiny-1m", seed: 3, out: join(dir, `m${k}`) });
          // `logprobs` with a trainable frame scores (and prunes to) those tokens, as the RL step's anchors do.
          const scored = await client.request("logprobs", { row_lengths: rowLengths }, scoring);
          const fb = await client.request("forward_backward", { row_lengths: rowLengths, objective: "sft" }, frames);
          const opt = await client.request("optim_step", { lr: 0.05 });
          runs.push({ loss: Number(fb.result.loss), fb: fb.frames.get("logprobs") as Float32Array, scored: scored.frames.get("logprobs") as Float32Array, gradNorm: Number(opt.result.grad_norm), pruned: fb.result.last_layer_pruned });
        } finally {
          await client.close();
        }
      }
      expect(runs.map((r) => r.pruned)).toEqual([true, false, false]);
      const [pruned, ...full] = runs;
      expect(pruned?.fb.some((x) => x !== 0)).toBe(true);
      for (const other of full) {
        expect(other.loss).toBeCloseTo(pruned?.loss ?? NaN, 5);
        other.fb.forEach((x, i) => expect(Math.abs(x - (pruned?.fb[i] ?? NaN))).toBeLessThan(1e-5));
        other.scored.forEach((x, i) => expect(Math.abs(x - (pruned?.scored[i] ?? NaN))).toBeLessThan(1e-5));
        // The gradient (its norm, as optim_step reports it; worker/tests/test_last_layer.py compares every entry).
        expect(Math.abs(other.gradNorm - (pruned?.gradNorm ?? NaN)) / (pruned?.gradNorm ?? NaN)).toBeLessThan(1e-5);
      }
      expect(pruned?.gradNorm).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
