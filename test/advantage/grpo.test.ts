import { describe, expect, it } from "vitest";
import { applyAdvantages, advantageMetrics, parseAdvantageConfig, planGroups, trainedRollouts } from "../../src/advantage/index.js";
import { buildBatch } from "../../src/batch/build.js";
import { UserError } from "../../src/core/errors.js";
import { buildForests } from "../../src/trees/forest.js";
import { branching, linear, result } from "./fixtures.js";
import { byToken, expectTokens } from "./helpers.js";

/**
 * Group (t, h1): r1 = 1 (a branching tree: 2 shared tokens, branches of 2 and 1 tokens), r2 = 0 (4 tokens), r3 an
 * infra error (3 tokens, excluded: with it the baseline would be 1/3). Group (t, h2): r4 = r5 = 0.5 (zero variance, 3
 * tokens each). Group (u, h1): r6 alone (3 tokens). r7 is in the batch without any result.
 */
const records = [...branching("r1", 100), ...linear("r2", 200, [202, 203]), ...linear("r3", 300, [302]), ...linear("r4", 400, [402]), ...linear("r5", 500, [502]), ...linear("r6", 600, [602]), ...linear("r7", 700, [702])];
const results = [result("r1", "t", "h1", 1), result("r2", "t", "h1", 0), result("r3", "t", "h1", 0, "infra_error"), result("r4", "t", "h2", 0.5), result("r5", "t", "h2", 0.5), result("r6", "u", "h1", 1)];
const A = 0.5 / (0.5 + 1e-6);

/** `tree-split`: a token budget so small that r1's two branches land in different rows (the shared prefix repeats). */
function run(layout: "tree" | "flat" | "tree-split", config: Record<string, unknown>) {
  const built = buildBatch(buildForests(records), layout === "tree-split" ? { layout: "tree", tokenBudget: 8 } : { layout });
  if (layout === "tree-split") expect(new Set(built.index.paths.filter((p) => p.rolloutId === "r1").map((p) => p.row)).size).toBe(2);
  const out = applyAdvantages({ built, results, config: parseAdvantageConfig(config) });
  return { built, out, view: byToken(built) };
}

/** Every token of a rollout with one (advantage, weight). */
function tokens(rollout: string, adv: number, w: number, calls: Record<string, number>): Record<string, [number, number]> {
  const out: Record<string, [number, number]> = {};
  for (const [c, n] of Object.entries(calls)) for (let i = 0; i < n; i++) out[`${rollout}_${c}:${i}`] = [adv, w];
  return out;
}

const lin = (n: number) => ({ a: 2, b: n });
const excluded = { ...tokens("r3", 0, 0, lin(1)), ...tokens("r7", 0, 0, lin(1)) };

describe.each(["tree", "flat", "tree-split"] as const)("GRPO over trees, %s layout", (layout) => {
  it("token-mean: each unique trainable token weighs 1/N (shared prefix counted once), infra errors and unscored rollouts at 0", () => {
    const { view, out } = run(layout, {});
    const w = 1 / 18;
    expectTokens(view, {
      ...tokens("r1", A, w, { a: 2, b1: 2, b2: 1 }),
      ...tokens("r2", -A, w, lin(2)),
      ...tokens("r4", 0, w, lin(1)),
      ...tokens("r5", 0, w, lin(1)),
      ...tokens("r6", 0, w, lin(1)),
      ...excluded,
    });
    expect(view.get("r1_a:0")?.copies).toBe(layout === "tree" ? 1 : 2);
    expect(out.stats.lossWeightSum).toBeCloseTo(1, 5);
    expect(out.stats.trainableTokens).toBe(18);
    expect(out.stats.excludedTokens).toBe(3);
    expect(out.stats.unscoredTokens).toBe(3);
  });

  it("sequence-mean: each root-to-leaf path weighs 1/P; the shared prefix collects a share from both branches", () => {
    const { view } = run(layout, { aggregation: "sequence-mean" });
    // P = 6 paths: r1 has two (4 and 3 tokens), the others one each.
    expectTokens(view, {
      ...tokens("r1", A, 7 / 72, { a: 2 }),
      ...tokens("r1", A, 1 / 24, { b1: 2 }),
      ...tokens("r1", A, 1 / 18, { b2: 1 }),
      ...tokens("r2", -A, 1 / 24, lin(2)),
      ...tokens("r4", 0, 1 / 18, lin(1)),
      ...tokens("r5", 0, 1 / 18, lin(1)),
      ...tokens("r6", 0, 1 / 18, lin(1)),
      ...excluded,
    });
  });

  it("prompt-equal: each rollout weighs 1/R however many branches it has", () => {
    const { view } = run(layout, { aggregation: "prompt-equal" });
    expectTokens(view, {
      ...tokens("r1", A, 1 / 25, { a: 2, b1: 2, b2: 1 }),
      ...tokens("r2", -A, 1 / 20, lin(2)),
      ...tokens("r4", 0, 1 / 15, lin(1)),
      ...tokens("r5", 0, 1 / 15, lin(1)),
      ...tokens("r6", 0, 1 / 15, lin(1)),
      ...excluded,
    });
  });

  it("negativeScale shrinks only negative advantages; weights and positive advantages are untouched", () => {
    const { view, out } = run(layout, { negativeScale: 0.25 });
    const w = 1 / 18;
    expectTokens(view, {
      ...tokens("r1", A, w, { a: 2, b1: 2, b2: 1 }),
      ...tokens("r2", -0.25 * A, w, lin(2)),
      ...tokens("r4", 0, w, lin(1)),
      ...tokens("r5", 0, w, lin(1)),
      ...tokens("r6", 0, w, lin(1)),
      ...excluded,
    });
    expect(out.stats.lossWeightSum).toBeCloseTo(1, 5);
  });

  it("Dr. GRPO: centred without std, token-sum over a constant normaliser", () => {
    const { view, out } = run(layout, { normalizeStd: false, aggregation: "token-sum", sumNormalizer: 10 });
    expectTokens(view, {
      ...tokens("r1", 0.5, 0.1, { a: 2, b1: 2, b2: 1 }),
      ...tokens("r2", -0.5, 0.1, lin(2)),
      ...tokens("r4", 0, 0.1, lin(1)),
      ...tokens("r5", 0, 0.1, lin(1)),
      ...tokens("r6", 0, 0.1, lin(1)),
      ...excluded,
    });
    expect(out.stats.lossWeightSum).toBeCloseTo(1.8, 5);
  });

  it("dropping zero-variance and singleton groups takes their tokens out of the loss and of the denominator", () => {
    const { view, out } = run(layout, { zeroVariance: "drop", singletons: "drop" });
    expectTokens(view, {
      ...tokens("r1", A, 1 / 9, { a: 2, b1: 2, b2: 1 }),
      ...tokens("r2", -A, 1 / 9, lin(2)),
      ...tokens("r4", 0, 0, lin(1)),
      ...tokens("r5", 0, 0, lin(1)),
      ...tokens("r6", 0, 0, lin(1)),
      ...excluded,
    });
    expect(out.stats.excluded).toEqual({ infra_error: 1, zero_variance: 2, singleton: 1 });
    expect(out.stats.droppedGroups).toBe(2);
    expect(out.stats.excludedTokens).toBe(12);
  });
});

describe("GRPO groups and statistics", () => {
  it("reports groups, exclusions, learnability and per-harness counts", () => {
    const { out } = run("tree", {});
    const s = out.stats;
    expect([s.groups, s.zeroVarianceGroups, s.singletonGroups, s.droppedGroups]).toEqual([3, 1, 1, 0]);
    expect([s.rollouts, s.validRollouts, s.includedRollouts]).toEqual([6, 5, 5]);
    expect(s.excluded).toEqual({ infra_error: 1, zero_variance: 0, singleton: 0 });
    // Learnability: |A| over the 5 valid rollouts, zero-variance and singleton members counting 0.
    expect(s.meanAbsAdvantage).toBeCloseTo((2 * A) / 5, 6);
    expect(s.perHarness.h1).toEqual({ rollouts: 4, valid: 3, included: 3, infraErrors: 1, meanReward: 2 / 3, meanAbsAdvantage: expect.closeTo((2 * A) / 3, 6) });
    expect(s.perHarness.h2).toMatchObject({ rollouts: 2, valid: 2, meanReward: 0.5, meanAbsAdvantage: 0 });
    // Token statistics over the 18 trained tokens: 5 at +A, 4 at −A, 9 at 0.
    expect(s.tokenMeanAbsAdvantage).toBeCloseTo((9 * A) / 18, 6);
    expect(s.tokenAdvantageMean).toBeCloseTo(A / 18, 6);
    const m = advantageMetrics(s);
    expect(m["adv/learnability"]).toBe(s.meanAbsAdvantage);
    expect(m["adv/h1/infra_errors"]).toBe(1);
    expect(m["adv/zero_variance_groups"]).toBe(1);
  });

  it("excludeCall leaves a call's tokens out of the loss and the denominators (async staleness) without moving baselines", () => {
    const built = buildBatch(buildForests(records));
    const out = applyAdvantages({ built, results, config: parseAdvantageConfig({}), excludeCall: (c) => c.callId === "r2_b" });
    expectTokens(byToken(built), {
      ...tokens("r1", A, 1 / 16, { a: 2, b1: 2, b2: 1 }),
      ...tokens("r2", -A, 1 / 16, { a: 2 }),
      ...tokens("r2", 0, 0, { b: 2 }),
      ...tokens("r4", 0, 1 / 16, lin(1)),
      ...tokens("r5", 0, 1 / 16, lin(1)),
      ...tokens("r6", 0, 1 / 16, lin(1)),
      ...excluded,
    });
    expect(out.stats.filteredTokens).toBe(2);
  });

  it("groups by a configurable key: by task only, h1 and h2 of task t form one group", () => {
    const plan = planGroups(results, parseAdvantageConfig({ groupBy: ["taskId"], normalizeStd: false }));
    // Group t: r1 = 1, r2 = 0, r4 = r5 = 0.5 → mean 0.5.
    expect(plan.rollouts.get("r1")?.advantage).toBeCloseTo(0.5, 9);
    expect(plan.rollouts.get("r4")?.advantage).toBeCloseTo(0, 9);
    expect(plan.groups.map((g) => [g.key, g.size, g.kind])).toEqual([
      ["taskId=t", 4, "normal"],
      ["taskId=u", 1, "singleton"],
    ]);
  });

  it("trainedRollouts lists what to build the batch from; equal float scores count as zero variance", () => {
    const plan = planGroups([result("x", "t", "h", 0.1 + 0.2), result("y", "t", "h", 0.3), result("z", "t", "h", 1, "infra_error")], parseAdvantageConfig({ zeroVariance: "drop" }));
    expect(plan.groups[0]?.kind).toBe("zero_variance");
    expect(plan.rollouts.get("x")?.advantage).toBe(0);
    expect([...trainedRollouts(plan)]).toEqual([]);
  });

  it("rejects invalid configs with the field named", () => {
    expect(() => parseAdvantageConfig({ aggregation: "mean" })).toThrow(UserError);
    expect(() => parseAdvantageConfig({ aggregation: "mean" })).toThrow(/aggregation/);
    expect(() => parseAdvantageConfig({ process: { subscore: "hits", decisions: "tool" } })).toThrow(/process.tool/);
    expect(() => parseAdvantageConfig({ eps: -1 })).toThrow(/eps/);
  });
});
