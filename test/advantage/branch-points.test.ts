import { describe, expect, it } from "vitest";
import { advantageMetrics, applyAdvantages, branchPoints, parseAdvantageConfig, planGroups } from "../../src/advantage/index.js";
import { buildBatch } from "../../src/batch/build.js";
import { UserError } from "../../src/core/errors.js";
import { buildForests } from "../../src/trees/forest.js";
import { rec, result } from "./fixtures.js";
import { byToken } from "./helpers.js";

const P = [1, 2, 3];
const config = parseAdvantageConfig({ negativeScope: "branch" });

describe("branch points: where a worse rollout left its better siblings' paths", () => {
  it("a failure that diverges mid-call branches at its first differing token, the longest match over the successes", () => {
    const calls = [
      rec({ callId: "s1", rolloutId: "s1", prompt: P, completion: [10, 11, 12, 13] }),
      rec({ callId: "s2", rolloutId: "s2", prompt: P, completion: [10, 14] }),
      rec({ callId: "f1", rolloutId: "f1", prompt: P, completion: [10, 11, 99, 98, 97] }),
      rec({ callId: "f2", rolloutId: "f2", prompt: P, completion: [50, 51] }),
    ];
    const plan = planGroups([result("s1", "t", "h", 1), result("s2", "t", "h", 1), result("f1", "t", "h", 0), result("f2", "t", "h", 0)], config);
    expect(branchPoints(calls, plan)).toEqual(new Map([["f1", 2], ["f2", 0]]));
  });

  it("a failure that sampled a success's completion, or a cut-off prefix of one, has no branch (nothing it chose differs)", () => {
    const calls = [
      rec({ callId: "s", rolloutId: "s", prompt: P, completion: [10, 11, 12] }),
      rec({ callId: "same", rolloutId: "same", prompt: P, completion: [10, 11, 12] }),
      rec({ callId: "cut", rolloutId: "cut", prompt: P, completion: [10, 11] }),
      rec({ callId: "longer", rolloutId: "longer", prompt: P, completion: [10, 11, 12, 13] }),
    ];
    const plan = planGroups([result("s", "t", "h", 1), result("same", "t", "h", 0), result("cut", "t", "h", 0), result("longer", "t", "h", 0)], config);
    // Sampling on where the success stopped is a choice of its own: offset 3.
    expect(branchPoints(calls, plan)).toEqual(new Map([["longer", 3]]));
  });

  it("only calls with a better rollout's exact prompt count: a later call after the branch, another group, an infra error do not", () => {
    const calls = [
      rec({ callId: "s_a", rolloutId: "s", prompt: P, completion: [10, 11] }),
      rec({ callId: "s_b", rolloutId: "s", prompt: [...P, 10, 11, 7], completion: [20, 21] }),
      // Same first call as s, its second call sees the same prompt and branches at offset 1.
      rec({ callId: "f_a", rolloutId: "f", prompt: P, completion: [10, 11] }),
      rec({ callId: "f_b", rolloutId: "f", prompt: [...P, 10, 11, 7], completion: [20, 30] }),
      // Branches in its first call; its second call's prompt holds the branch, so no better rollout saw it.
      rec({ callId: "g_a", rolloutId: "g", prompt: P, completion: [12] }),
      rec({ callId: "g_b", rolloutId: "g", prompt: [...P, 12, 7], completion: [40] }),
      // Same prompt, other group (another harness): not a sibling.
      rec({ callId: "o_a", rolloutId: "o", prompt: P, completion: [13] }),
      // A success whose run broke on our side takes no part.
      rec({ callId: "x_a", rolloutId: "x", prompt: P, completion: [12, 5] }),
    ];
    const plan = planGroups([result("s", "t", "h", 1), result("f", "t", "h", 0), result("g", "t", "h", 0), result("o", "t", "h2", 0), result("x", "t", "h", 1, "infra_error")], config);
    expect(branchPoints(calls, plan)).toEqual(new Map([["f_b", 1], ["g_a", 0]]));
  });

  it("graded rewards: each rollout against those scoring more than it; the best has no branch", () => {
    const calls = [
      rec({ callId: "best", rolloutId: "best", prompt: P, completion: [10, 11, 12] }),
      rec({ callId: "mid", rolloutId: "mid", prompt: P, completion: [10, 11, 50] }),
      rec({ callId: "low", rolloutId: "low", prompt: P, completion: [10, 11, 50, 60] }),
    ];
    const plan = planGroups([result("best", "t", "h", 1), result("mid", "t", "h", 0.5), result("low", "t", "h", 0)], config);
    // low's longest match is with mid (3 tokens), which scored more.
    expect(branchPoints(calls, plan)).toEqual(new Map([["mid", 2], ["low", 3]]));
  });
});

describe("negative_scope: branch in the advantages", () => {
  const records = [
    rec({ callId: "s", rolloutId: "s", prompt: P, completion: [10, 11, 12] }),
    rec({ callId: "f", rolloutId: "f", prompt: P, completion: [10, 40, 41, 42] }),
    rec({ callId: "c", rolloutId: "c", prompt: P, completion: [10, 11, 12] }),
  ];
  const results = [result("s", "t", "h", 1), result("f", "t", "h", 0), result("c", "t", "h", 0)];

  function run(settings: Record<string, unknown>) {
    const built = buildBatch(buildForests(records), { layout: "tree" });
    const cfg = parseAdvantageConfig(settings);
    const plan = planGroups(results, cfg);
    const out = applyAdvantages({ built, results, config: cfg, plan, branches: branchPoints(records, plan) });
    return { out, view: byToken(built) };
  }

  it("a failure keeps its negative advantage on its branch token only, scaled by negative_scale; successes keep theirs", () => {
    const { out, view } = run({ negativeScope: "branch", negativeScale: 0.5 });
    const mean = 1 / 3;
    const std = Math.sqrt(2 / 9);
    const pos = (1 - mean) / (std + 1e-6);
    const neg = (0 - mean) / (std + 1e-6);
    for (let i = 0; i < 3; i++) expect(view.get(`s:${i}`)?.adv[0]).toBeCloseTo(pos, 5);
    expect(view.get("f:1")?.adv[0]).toBeCloseTo(0.5 * neg, 5);
    for (const k of ["f:0", "f:2", "f:3", "c:0", "c:1", "c:2"]) expect(view.get(k)?.adv[0], k).toBe(0);
    // The zeroed tokens still count in token-mean's denominator (10 unique tokens), as negative_scale 0 leaves them.
    expect(view.get("f:2")?.weight).toBeCloseTo(1 / 10, 6);
    expect(out.stats.branchTokens).toBe(1);
    expect(advantageMetrics(out.stats)["adv/branch_tokens"]).toBe(1);
  });

  it("scope all (the default) reports no branch tokens and leaves every negative token", () => {
    const { out, view } = run({});
    expect(out.stats.branchTokens).toBeNull();
    expect(advantageMetrics(out.stats)["adv/branch_tokens"]).toBeUndefined();
    expect(view.get("f:3")?.adv[0]).toBeLessThan(0);
  });

  it("without branch points, or with the PPO estimator, it is a config error", () => {
    const built = buildBatch(buildForests(records), { layout: "tree" });
    expect(() => applyAdvantages({ built, results, config })).toThrow(UserError);
    expect(() => parseAdvantageConfig({ estimator: "ppo", negativeScope: "branch" })).toThrow(/negative_scope "branch" is for the grpo estimator/);
  });
});
