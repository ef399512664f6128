import { describe, expect, it } from "vitest";
import { applyAdvantages, parseAdvantageConfig } from "../../src/advantage/index.js";
import type { BuiltBatch } from "../../src/batch/batch-index.js";
import { buildBatch } from "../../src/batch/build.js";
import type { CallRecord } from "../../src/icr/records.js";
import { buildForests } from "../../src/trees/forest.js";
import { branching, linear, rec, result, tok } from "./fixtures.js";
import { byToken } from "./helpers.js";

/** Critic values laid out like the batch: V by (call, offset) on trainable tokens, 99 on context (must never be read). */
function valuesFor(built: BuiltBatch, v: Record<string, number>): Float32Array[] {
  return built.batch.rows.map((row, r) => {
    const ix = built.index.rows[r];
    const out = new Float32Array(row.tokens.length).fill(99);
    if (!ix) return out;
    for (let i = 0; i < row.tokens.length; i++) {
      if (row.trainable[i] !== 1) continue;
      out[i] = v[`${built.index.calls[ix.call[i] as number]?.callId}:${ix.offset[i]}`] ?? 0;
    }
    return out;
  });
}

const V = { "r1_a:0": 0.5, "r1_a:1": 0.4, "r1_b1:0": 0.6, "r1_b1:1": 0.7, "r1_b2:0": 0.2 };

describe.each(["tree", "flat"] as const)("PPO: GAE along tree paths, %s layout", (layout) => {
  it("two branches share a prefix: each path runs its own GAE, shared tokens get the mean; returns = A + V", () => {
    const records = [...branching("r1", 100), ...linear("r3", 300, [302])];
    const built = buildBatch(buildForests(records), { layout });
    const results = [result("r1", "t", "h", 1), result("r3", "t", "h", 0, "infra_error")];
    const config = parseAdvantageConfig({ estimator: "ppo", ppo: { gamma: 0.9, lambda: 0.8, whiten: false } });
    const out = applyAdvantages({ built, results, config, values: valuesFor(built, V) });
    // γλ = 0.72. Path a0 a1 b1_0 b1_1 (reward 1 at b1_1):
    //   b1_1: δ = 1 − 0.7 = 0.3;             A = 0.3
    //   b1_0: δ = 0.9·0.7 − 0.6 = 0.03;      A = 0.03 + 0.72·0.3 = 0.246
    //   a1:   δ = 0.9·0.6 − 0.4 = 0.14;      A = 0.14 + 0.72·0.246 = 0.31712
    //   a0:   δ = 0.9·0.4 − 0.5 = −0.14;     A = −0.14 + 0.72·0.31712 = 0.0883264
    // Path a0 a1 b2_0 (reward 1 at b2_0):
    //   b2_0: δ = 1 − 0.2 = 0.8;             A = 0.8
    //   a1:   δ = 0.9·0.2 − 0.4 = −0.22;     A = −0.22 + 0.72·0.8 = 0.356
    //   a0:   δ = −0.14;                     A = −0.14 + 0.72·0.356 = 0.11632
    const expected: Record<string, [number, number]> = {
      "r1_a:0": [(0.0883264 + 0.11632) / 2, 0.5],
      "r1_a:1": [(0.31712 + 0.356) / 2, 0.4],
      "r1_b1:0": [0.246, 0.6],
      "r1_b1:1": [0.3, 0.7],
      "r1_b2:0": [0.8, 0.2],
    };
    const view = byToken(built);
    for (const [key, [a, v]] of Object.entries(expected)) {
      const t = view.get(key);
      for (const x of t?.adv ?? []) expect(x, key).toBeCloseTo(a, 5);
      for (const x of t?.returns ?? []) expect(x, key).toBeCloseTo(a + v, 5);
      expect(t?.weight).toBeCloseTo(1 / 5, 6);
    }
    for (const key of ["r3_a:0", "r3_a:1", "r3_b:0"]) expect(view.get(key)).toMatchObject({ adv: [0], weight: 0, returns: [0] });
    expect(out.stats.ppo).toMatchObject({ meanValue: expect.closeTo(0.48, 6), pathsPerToken: expect.closeTo(7 / 5, 6) });
    for (const row of built.batch.rows) expect(row.returns?.length).toBe(row.tokens.length);
  });
});

describe("PPO options", () => {
  it("process rewards land on their decision's last token; with γ = λ = 1 and V = 0 a token's advantage is its future reward", () => {
    const tc = '<tool_call>\n{"name": "search", "arguments": {}}\n</tool_call>';
    let prompt = tok.encode("q");
    const records: CallRecord[] = ["x", "y", "z"].map((s, k) => {
      const r = rec({ callId: `c${k}`, rolloutId: "r", prompt, completion: k < 2 ? tc : "answer" });
      prompt = [...prompt, ...r.completionTokens, ...tok.encode(s)];
      return r;
    });
    const forests = buildForests(records);
    const built = buildBatch(forests);
    const config = parseAdvantageConfig({ estimator: "ppo", ppo: { gamma: 1, lambda: 1, whiten: false }, process: { subscore: "hits", decisions: "tool", tool: "search", coef: 0.5 } });
    applyAdvantages({ built, results: [result("r", "t", "h", 1, "ok", { hits: [1, 0.4] })], config, forests, values: valuesFor(built, {}) });
    const view = byToken(built);
    for (const [key, t] of view) {
      const call = key.split(":")[0];
      const expected = call === "c0" ? 1 + 0.5 * 1 + 0.5 * 0.4 : call === "c1" ? 1 + 0.5 * 0.4 : 1;
      expect(t.adv[0], key).toBeCloseTo(expected, 6);
    }
  });

  it("whitening gives mean 0 and std 1 over unique trainable tokens; missing values are a clear error", () => {
    const built = buildBatch(buildForests([...branching("r1", 100), ...linear("r2", 200, [202])]), { layout: "flat" });
    const results = [result("r1", "t", "h", 1), result("r2", "t", "h", 0)];
    const config = parseAdvantageConfig({ estimator: "ppo" });
    applyAdvantages({ built, results, config, values: valuesFor(built, V) });
    const adv = [...byToken(built).values()].map((t) => t.adv[0] as number);
    const mean = adv.reduce((a, b) => a + b, 0) / adv.length;
    const std = Math.sqrt(adv.reduce((a, b) => a + (b - mean) ** 2, 0) / adv.length);
    expect(mean).toBeCloseTo(0, 6);
    expect(std).toBeCloseTo(1, 5);
    expect(() => applyAdvantages({ built, results, config })).toThrow(/criticValues/);
    expect(() => applyAdvantages({ built, results, config, values: [new Float32Array(1)] })).toThrow(/rows/);
  });
});
