import { describe, expect, it } from "vitest";
import type { CallRecord } from "../../src/icr/records.js";
import { filterForests } from "../../src/trees/filter.js";
import { buildForests } from "../../src/trees/forest.js";
import { treePaths } from "../../src/trees/paths.js";
import type { SessionTree } from "../../src/trees/types.js";
import { call, compactionSession, extend, linearSession, retrySession, sideConversationSession, subAgentRollout, toolTurn } from "./fixtures.js";

function keptIds(recs: CallRecord[], options: Parameters<typeof filterForests>[1]): string[] {
  const { kept } = filterForests(buildForests(recs), options);
  return kept.flatMap((k) => [...k.kept].flatMap(([tree, set]: [SessionTree, Set<number>]) => [...set].map((i) => tree.calls[i]?.callId as string))).sort();
}

describe("tree filters", () => {
  it("dead leaves: keeps the regeneration that continued, drops the malformed one, and counts it", () => {
    const { kept, stats } = filterForests(buildForests(retrySession()));
    expect(stats.deadLeafCalls).toBe(1);
    expect(stats.deadLeafBranches).toBe(1);
    const [tree, set] = [...(kept[0]?.kept ?? [])][0] as [SessionTree, Set<number>];
    expect(treePaths(tree, set).map((p) => p.leafCall.callId)).toEqual(["r3"]);
  });

  it("dead leaves: among retries that all end, the valid one wins over a longer truncated one", () => {
    const [r1] = retrySession();
    const p = extend(r1 as CallRecord, toolTurn("x"));
    const long = call({ callId: "long", prompt: p, completion: "a very long answer that ran out of tokens", finishReason: "length", parentCallId: "r1" });
    const ok = call({ callId: "ok", prompt: p, completion: "ok<|im_end|>", parentCallId: "r1" });
    expect(keptIds([r1 as CallRecord, long, ok], {})).toEqual(["ok", "r1"]);
    // Without validity the longest continuation wins.
    expect(keptIds([r1 as CallRecord, long, ok], { isValid: () => true })).toEqual(["long", "r1"]);
    expect(keptIds([r1 as CallRecord, long, ok], { deadLeaves: false })).toEqual(["long", "ok", "r1"]);
  });

  it("dead leaves: a malformed regeneration (recorded malformed count) loses to a shorter well-formed one", () => {
    const [r1] = retrySession() as [CallRecord];
    const p = extend(r1, toolTurn("x y z"));
    const bad = call({ callId: "bad", prompt: p, completion: '<tool_call>\n{"name": "bash", "arguments": {"cmd": "wc -l --total=only"</tool_call><|im_end|>', parentCallId: "r1" });
    const good = call({ callId: "good", prompt: p, completion: "3 files<|im_end|>", parentCallId: "r1" });
    expect(bad.spans?.malformed).toBe(1);
    expect(keptIds([r1, bad, good], {})).toEqual(["good", "r1"]);
    // Judged by status and finish reason only, both look valid and the longer (malformed) leaf wins.
    expect(keptIds([r1, bad, good], { isValid: (r) => r.status === "ok" && r.finishReason === "stop" })).toEqual(["bad", "r1"]);
  });

  it("over-branching rollouts are dropped whole and counted", () => {
    const recs = [...retrySession(), ...linearSession("ses_2", "rol_2")];
    const { kept, stats } = filterForests(buildForests(recs), { deadLeaves: false, maxBranches: 1 });
    expect(stats.overBranchingRollouts).toBe(1);
    expect(stats.rolloutsKept).toBe(1);
    expect(kept.map((k) => k.forest.rolloutId)).toEqual(["rol_2"]);
  });

  it("auxiliary trajectories: main-only drops sub-agent and compaction segments, all keeps them", () => {
    const recs = [...subAgentRollout(), ...compactionSession().map((r) => ({ ...r, rolloutId: "rol_c", sessionId: "ses_c" }))];
    const { stats } = filterForests(buildForests(recs), { trajectories: "main" });
    expect(stats.auxiliaryCalls).toBe(2 + 2);
    expect(keptIds(recs, { trajectories: "main" })).toEqual(["k1", "k2", "k3", "m1", "m2"]);
    expect(keptIds(recs, { trajectories: "all" })).toHaveLength(9);
    expect(keptIds(recs, { trajectories: "main", auxiliaryLabels: ["sub-agent"] })).toHaveLength(7);
  });

  it("auxiliary trajectories: a side conversation's own rewrites are side too (Qwen Code's memory agent), the task's stay main", () => {
    const recs = sideConversationSession();
    const tree = buildForests(recs)[0]!.trees[0]!;
    const seg = (id: string) => tree.segments[tree.calls[tree.callIndex.get(id)!]!.segment]!;
    expect(["q1", "q3", "a1", "a2"].map((id) => [seg(id).label, seg(id).lineage])).toEqual([
      ["main", "main"],
      ["rewrite", "main"],
      ["side", "side"],
      ["rewrite", "side"],
    ]);
    const { stats } = filterForests(buildForests(recs), { trajectories: "main" });
    expect(stats.auxiliaryCalls).toBe(2);
    expect(keptIds(recs, { trajectories: "main" })).toEqual(["q1", "q2", "q3"]);
    expect(keptIds(recs, { trajectories: "all" })).toEqual(["a1", "a2", "q1", "q2", "q3"]);
  });
});
