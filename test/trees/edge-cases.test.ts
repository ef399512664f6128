import { describe, expect, it } from "vitest";
import { buildBatch } from "../../src/batch/build.js";
import type { CallRecord } from "../../src/icr/records.js";
import { filterForests } from "../../src/trees/filter.js";
import { buildForests } from "../../src/trees/forest.js";
import { treePaths } from "../../src/trees/paths.js";
import { buildSessionTree } from "../../src/trees/session-tree.js";
import { viewSession } from "../../src/trees/view.js";
import { call, extend, first, linearSession, toolTurn } from "./fixtures.js";
import { expectReconstructs } from "./reconstruct.js";

describe("edge cases of tree building", () => {
  it("a failed call with no completion ends where its prompt ends and contributes no sampled tokens", () => {
    const [a] = linearSession() as [CallRecord];
    const failed: CallRecord = { ...call({ callId: "f", prompt: extend(a, toolTurn("x")), completion: "", parentCallId: a.callId, status: "error" }), completionTokens: [], logprobs: [], finishReason: null };
    const tree = buildSessionTree([a, failed]);
    expectReconstructs(tree);
    const f = tree.calls[1];
    expect(f?.endNode).toBe(f?.promptEndNode);
    expect(viewSession(tree).calls[1]?.trainableTokens).toBe(0);
    const built = buildBatch(buildForests([a, failed]), { layout: "tree", filter: { deadLeaves: false } });
    expect(built.stats.trainableTokens).toBe(a.completionTokens.length);
  });

  it("an identical regeneration shares the first sampler's run: one path, trainable once, the duplicate dropped as a dead leaf", () => {
    const [a] = linearSession() as [CallRecord];
    const dup: CallRecord = { ...a, callId: "dup", logprobs: a.logprobs.map((x) => x - 1) };
    const tree = buildSessionTree([a, dup]);
    expectReconstructs(tree);
    expect(tree.calls[1]?.label).toBe("retry");
    expect(tree.calls[1]?.endNode).toBe(tree.calls[0]?.endNode);
    expect(treePaths(tree)).toHaveLength(1);
    const v = viewSession(tree);
    expect(v.calls.map((c) => c.trainableTokens)).toEqual([a.completionTokens.length, 0]);
    const { stats } = filterForests(buildForests([a, dup]));
    expect(stats.deadLeafCalls).toBe(1);
  });

  it("the same record delivered twice is inserted once", () => {
    const recs = linearSession();
    const tree = buildSessionTree([...recs, recs[1] as CallRecord]);
    expect(tree.calls).toHaveLength(recs.length);
    expectReconstructs(tree);
  });

  it("sampled tokens without a recorded logprob are kept as tokens but not trainable", () => {
    const c = call({ callId: "nolp", prompt: first("x"), completion: "answer<|im_end|>" });
    const short: CallRecord = { ...c, logprobs: c.logprobs.slice(0, 3) };
    const built = buildBatch(buildForests([short]), { layout: "flat" });
    const row = built.batch.rows[0];
    expect(row?.tokens.length).toBe(c.promptTokens.length + c.completionTokens.length);
    expect(built.stats.trainableTokens).toBe(3);
  });

  it("counts trainable tokens per policy version (asynchronous rollouts mix versions)", () => {
    const [a] = linearSession() as [CallRecord];
    const b = call({ callId: "v4", prompt: extend(a, toolTurn("x")), completion: "done<|im_end|>", parentCallId: a.callId, policyVersion: 4 });
    const built = buildBatch(buildForests([a, b]), { layout: "tree" });
    expect(built.stats.trainableByPolicyVersion).toEqual({ "3": a.completionTokens.length, "4": b.completionTokens.length });
    const row = built.batch.rows[0];
    const versions = new Set([...(row?.policyVersion ?? [])]);
    expect(versions).toEqual(new Set([-1, 3, 4]));
  });

  it("an empty store gives an empty batch with neutral statistics", () => {
    const built = buildBatch([], { layout: "tree" });
    expect(built.batch.rows).toEqual([]);
    expect(built.stats.dedupRatio).toBe(1);
    expect(built.stats.paths).toBe(0);
  });

  it("rejects a non-positive token budget with a user error", () => {
    expect(() => buildBatch(buildForests(linearSession()), { tokenBudget: 0 })).toThrow(/tokenBudget/);
  });
});
