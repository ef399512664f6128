import { describe, expect, it } from "vitest";
import type { BuiltBatch } from "../../src/batch/batch-index.js";
import { buildBatch } from "../../src/batch/build.js";
import type { CallRecord } from "../../src/icr/records.js";
import { DemoProbability, formatProbability } from "../../src/train/demo-probability.js";
import { buildForests } from "../../src/trees/forest.js";
import { call, first, linearSession, parallelSession, subAgentRollout } from "../trees/fixtures.js";

/**
 * The warm start's "probability of reproducing a demonstration" figure, checked against the records themselves: per
 * rollout, the sum of its calls' recorded logprobs (each call once), then the mean of exp over rollouts. The packed
 * rows' oldLogprobs carry exactly those values at trainable tokens, so feeding them as the trainer's logprobs must give
 * the records' figure in every layout: one tree row, trees split over small rows (shared prefixes repeated), and the
 * flat layout (a call's tokens repeated on every path through it).
 */

// Scaled so a rollout's sum is O(1): exp of the raw sums (−20 to −80) would compare as 0 = 0.
const SCALE = 0.01;

function demonstrations(): CallRecord[] {
  const twin = (callId: string, rolloutId: string, sessionId: string): CallRecord =>
    call({ callId, rolloutId, sessionId, prompt: first("Add 2 and 3"), completion: "5<|im_end|>" });
  return [
    ...linearSession("s_a", "r_a", "a"),
    ...linearSession("s_b", "r_b", "b"),
    ...parallelSession().map((c) => ({ ...c, sessionId: "s_p", rolloutId: "r_p" })),
    // One rollout of two sessions: the main agent's and a sub-agent's.
    ...subAgentRollout(),
    // Two single-call demonstrations with the same prompt and answer.
    twin("t1", "r_t1", "s_t1"),
    twin("t2", "r_t2", "s_t2"),
  ];
}

/** What the figure must be, from the records: mean over rollouts of exp(Σ over its calls of Σ scaled logprobs). */
function fromRecords(records: readonly CallRecord[]): number {
  const sums = new Map<string, number>();
  for (const r of records) sums.set(r.rolloutId ?? "", (sums.get(r.rolloutId ?? "") ?? 0) + SCALE * (r.logprobs ?? []).reduce((a, b) => a + b, 0));
  return [...sums.values()].reduce((a, s) => a + Math.exp(s), 0) / sums.size;
}

const build = (records: readonly CallRecord[], layout: "tree" | "flat", tokenBudget = 8192): BuiltBatch =>
  buildBatch(buildForests([...records]), { layout, tokenBudget, filter: { deadLeaves: false, maxBranches: null } });

const scaled = (b: BuiltBatch): Float32Array[] => b.batch.rows.map((r) => r.oldLogprobs.map((v) => v * SCALE));

describe("the probability of reproducing the demonstrations (warm start)", () => {
  const records = demonstrations();
  const expected = fromRecords(records);

  for (const [name, layout, budget] of [
    ["one tree row per budget of 8k tokens", "tree", 8192],
    ["trees split over 256-token rows (prefixes repeated)", "tree", 256],
    ["the flat layout (a call's tokens on every path through it)", "flat", 8192],
  ] as const) {
    it(`equals the records' figure: ${name}`, () => {
      const b = build(records, layout, budget);
      if (budget === 256) expect(b.batch.rows.length).toBeGreaterThan(4);
      const p = new DemoProbability(b);
      expect(p.demos).toBe(6);
      p.observe(b.batch.rows, scaled(b));
      expect(p.value()).toBeCloseTo(expected, 6);
    });
  }

  it("is NaN until every sampled token has been through a step, then follows each row's latest logprobs", () => {
    const b = build(records, "tree", 256);
    const p = new DemoProbability(b);
    const lp = scaled(b);
    const last = b.batch.rows.length - 1;
    // Rows arrive a micro-batch at a time, in any order.
    p.observe(b.batch.rows.slice(0, last).reverse(), lp.slice(0, last).reverse());
    expect(p.value()).toBeNaN();
    p.observe([b.batch.rows[last]!], [lp[last]!]);
    expect(p.value()).toBeCloseTo(expected, 6);
    // A later step that is certain of every token replaces the earlier values (it does not add to them).
    p.observe(b.batch.rows, b.batch.rows.map((r) => new Float32Array(r.tokens.length)));
    expect(p.value()).toBeCloseTo(1, 12);
  });

  it("counts two identical demonstrations as two (their trees share only the row's root prompt)", () => {
    const twins = demonstrations().filter((r) => r.rolloutId === "r_t1" || r.rolloutId === "r_t2");
    const b = build(twins, "tree");
    expect(b.batch.rows).toHaveLength(1);
    expect(b.batch.rows[0]!.trainable.reduce((a, t) => a + t, 0)).toBe(2 * twins[0]!.completionTokens.length);
    const p = new DemoProbability(b);
    expect(p.demos).toBe(2);
    p.observe(b.batch.rows, scaled(b));
    expect(p.value()).toBeCloseTo(fromRecords(twins), 9);
  });

  it("has nothing to average over an empty batch", () => {
    const p = new DemoProbability(build([], "tree"));
    expect(p.demos).toBe(0);
    expect(p.value()).toBeNaN();
    expect(p.opening()).toBeNaN();
  });

  it("opening: the mean over calls of the probability of their first K sampled tokens, from the records, in every layout", () => {
    const perCall = (k: number): number => records.reduce((a, r) => a + Math.exp(SCALE * (r.logprobs ?? []).slice(0, k).reduce((x, y) => x + y, 0)), 0) / records.length;
    for (const [layout, budget] of [
      ["tree", 8192],
      ["tree", 256],
      ["flat", 8192],
    ] as const) {
      const b = build(records, layout, budget);
      for (const k of [1, 4]) {
        const p = new DemoProbability(b, k);
        expect(p.opening()).toBeNaN();
        p.observe(b.batch.rows, scaled(b));
        expect(p.opening(), `${layout} ${budget}, first ${k}`).toBeCloseTo(perCall(k), 6);
      }
    }
    // Opening a call right is likelier than reproducing it whole.
    expect(perCall(4)).toBeGreaterThan(expected);
  });
});

describe("a reproduction probability in a log line", () => {
  it("keeps three decimals, and shows a tiny early-SFT figure by its magnitude instead of 0.000", () => {
    expect([0.41234, 0.001, 0, 1].map(formatProbability)).toEqual(["0.412", "0.001", "0.000", "1.000"]);
    expect(formatProbability(2.34e-45)).toBe("2.3e-45");
  });
});
