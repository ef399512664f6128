import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BuiltBatch } from "../../src/batch/batch-index.js";
import { buildBatch } from "../../src/batch/build.js";
import type { PackedRow } from "../../src/batch/types.js";
import { createTrainer } from "../../src/trainer/index.js";
import type { Trainer } from "../../src/trainer/types.js";
import { buildForests } from "../../src/trees/forest.js";
import { compactionSession, parallelSession, randomSession, retrySession, subAgentRollout } from "../trees/fixtures.js";

/** Per path: the worker's logprob at each token, read by following parent pointers from the path's leaf. */
function pathLogprobs(b: BuiltBatch, scores: Float32Array[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const p of b.index.paths) {
    const row = b.batch.rows[p.row] as PackedRow;
    const lp = scores[p.row] as Float32Array;
    const seq: number[] = [];
    for (let i = p.leafToken; i >= 0; i = row.parent[i] as number) seq.push(lp[i] as number);
    out.set(`${p.sessionId}/${p.leafCallId}`, seq.reverse());
  }
  return out;
}

describe("tree-packed vs flat batches through the real PyTorch worker", () => {
  let trainer: Trainer;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "hrl-batch-worker-"));
    trainer = await createTrainer("torch", { threads: 1 });
    await trainer.init({ preset: "tiny-1m", seed: 5, out: join(dir, "model") });
  });

  afterAll(async () => {
    await trainer?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("gives identical per-token logprobs on every path (sub-agents, compaction, retries, parallel calls, random sessions)", async () => {
    const recs = [
      ...subAgentRollout(),
      ...compactionSession().map((r) => ({ ...r, sessionId: "ses_c", rolloutId: "rol_c" })),
      ...retrySession().map((r) => ({ ...r, sessionId: "ses_r", rolloutId: "rol_r" })),
      ...parallelSession().map((r) => ({ ...r, sessionId: "ses_p", rolloutId: "rol_p" })),
      ...randomSession(11, 12, "ses_x", "rol_x"),
    ];
    const forests = buildForests(recs);
    const opts = { filter: { deadLeaves: false, maxBranches: null } } as const;
    const flat = buildBatch(forests, { ...opts, layout: "flat" });
    const tree = buildBatch(forests, { ...opts, layout: "tree", tokenBudget: 2048 });
    expect(tree.stats.emittedTokens).toBeLessThan(flat.stats.emittedTokens);
    const [fs, ts] = await Promise.all([trainer.logprobs(flat.batch, { entropy: false }), trainer.logprobs(tree.batch, { entropy: false })]);
    const fp = pathLogprobs(flat, fs.logprobs);
    const tp = pathLogprobs(tree, ts.logprobs);
    expect(tp.size).toBe(fp.size);
    let compared = 0;
    for (const [key, a] of fp) {
      const b = tp.get(key) as number[];
      expect(b).toHaveLength(a.length);
      for (let i = 0; i < a.length; i++) expect(Math.abs((a[i] as number) - (b[i] as number))).toBeLessThanOrEqual(2e-5);
      compared += a.length;
    }
    expect(compared).toBe(flat.stats.flatTokens);
    // Trainable tokens are scored (non-zero logprob) and sit where the engine's logprob was recorded.
    const row = tree.batch.rows[0] as PackedRow;
    const lp = ts.logprobs[0] as Float32Array;
    for (let i = 0; i < row.tokens.length; i++) if (row.trainable[i] === 1) expect(lp[i]).toBeLessThan(0);
  });
});
