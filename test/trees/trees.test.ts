import { describe, expect, it } from "vitest";
import type { CallRecord } from "../../src/icr/records.js";
import { buildForests } from "../../src/trees/forest.js";
import { treePaths } from "../../src/trees/paths.js";
import { buildSessionTree } from "../../src/trees/session-tree.js";
import { expectReconstructs } from "./reconstruct.js";
import type { SessionTree, TreeCall, TreeNode } from "../../src/trees/types.js";
import { call, compactionSession, editedHistorySession, enc, extend, first, linearSession, parallelSession, randomSession, retrySession, strippedReasoningSession, subAgentRollout, toolTurn } from "./fixtures.js";

function byId(tree: SessionTree, id: string): TreeCall {
  const c = tree.calls[tree.callIndex.get(id) as number];
  if (!c) throw new Error(`no call ${id}`);
  return c;
}

function sampledTokens(tree: SessionTree): number {
  return tree.nodes.filter((n: TreeNode) => n.role === "sampled").reduce((s, n) => s + n.end - n.start, 0);
}

describe("session prefix trees from hand-built records", () => {
  it("linear multi-turn: one segment, one path, each call's parent verified, tool outputs as spans", () => {
    const recs = linearSession();
    const tree = buildSessionTree(recs);
    expectReconstructs(tree);
    expect(tree.segments).toHaveLength(1);
    expect(tree.segments[0]?.label).toBe("main");
    expect(treePaths(tree)).toHaveLength(1);
    expect(tree.disagreements).toEqual([]);
    for (let i = 1; i < recs.length; i++) {
      const c = byId(tree, `c${i + 1}`);
      expect(c.treeParent).toBe(`c${i}`);
      const parent = recs[i - 1] as CallRecord;
      const parentEnd = parent.promptTokens.length + parent.completionTokens.length;
      expect(c.inserted).toEqual({ start: parentEnd, end: c.record.promptTokens.length, kind: "tool_output" });
    }
    expect(byId(tree, "c1").inserted).toEqual({ start: 0, end: recs[0]?.promptTokens.length, kind: "prompt" });
    // Every completion token is sampled exactly once; nothing else is.
    expect(sampledTokens(tree)).toBe(recs.reduce((s, r) => s + r.completionTokens.length, 0));
  });

  it("parallel tool calls: one call with two tool calls, both results in the next prompt as one tool-output span", () => {
    const tree = buildSessionTree(parallelSession());
    expectReconstructs(tree);
    const p2 = byId(tree, "p2");
    expect(p2.treeParent).toBe("p1");
    expect(p2.inserted?.kind).toBe("tool_output");
    const text = new TextDecoder().decode(Uint8Array.from(p2.record.promptTokens.slice(p2.inserted?.start, p2.inserted?.end).filter((t) => t < 256)));
    expect(text).toContain("a.txt");
    expect(text).toContain("b.txt");
  });

  it("sub-agents: their session links to the spawning call and is labelled sub-agent", () => {
    const [forest] = buildForests(subAgentRollout());
    expect(forest?.trees.map((t) => t.sessionId)).toEqual(["ses_main", "ses_sub"]);
    expect(forest?.spawnLinks).toEqual([{ sessionId: "ses_sub", segment: 0, rootCallId: "s1", spawnedByCallId: "m1", parentSessionId: "ses_main" }]);
    const sub = forest?.trees[1] as SessionTree;
    expectReconstructs(sub);
    expect(sub.subAgent).toBe(true);
    expect(sub.segments.map((s) => [s.label, s.linkedFrom])).toEqual([["sub-agent", "m1"]]);
    expect(forest?.trees[0]?.segments.map((s) => s.label)).toEqual(["main"]);
  });

  it("compaction: a new segment linked to the compacted call, sharing only the system prompt", () => {
    const tree = buildSessionTree(compactionSession());
    expectReconstructs(tree);
    expect(tree.segments.map((s) => [s.label, s.breakKind, s.linkedFrom, s.callIds])).toEqual([
      ["main", null, null, ["k1", "k2", "k3"]],
      ["compaction", "compaction", "k3", ["k4", "k5"]],
    ]);
    const k4 = byId(tree, "k4");
    expect(k4.treeParent).toBeNull();
    expect(k4.inserted?.kind).toBe("harness");
    expect(k4.sharedPrefixTokens).toBeGreaterThan(enc("<|im_start|>system\n").length);
    expect(byId(tree, "k5").label).toBe("compaction");
    expect(treePaths(tree)).toHaveLength(2);
  });

  it("retry: same prompt, different completion → siblings under the same parent", () => {
    const tree = buildSessionTree(retrySession());
    expectReconstructs(tree);
    const r2 = byId(tree, "r2");
    const r2b = byId(tree, "r2b");
    expect(r2b.label).toBe("retry");
    expect(r2b.retryOf).toBe("r2");
    expect(r2b.treeParent).toBe("r1");
    expect(r2b.promptEndNode).toBe(r2.promptEndNode);
    expect(r2b.segment).toBe(r2.segment);
    expect(byId(tree, "r3").treeParent).toBe("r2b");
    expect(tree.disagreements).toEqual([]);
    expect(treePaths(tree).map((p) => p.leafCall.callId)).toEqual(["r2", "r3"]);
  });

  it("edited history: a rewrite segment sharing the prefix up to the edit", () => {
    const tree = buildSessionTree(editedHistorySession());
    expectReconstructs(tree);
    const e3 = byId(tree, "e3");
    expect(tree.segments[e3.segment]?.label).toBe("rewrite");
    expect(tree.segments[e3.segment]?.linkedFrom).toBe("e2");
    // Shared: system + "<|im_start|>user\nRename foo to ba"; the edit starts at "z".
    expect(e3.sharedPrefixTokens).toBe(enc("<|im_start|>system\nYou are a coding agent. Tools: bash, read.<|im_end|>\n<|im_start|>user\nRename foo to ba").length);
  });

  it("stripped reasoning: the re-rendered turn is context (harness), the original sampled turn stays on its own path", () => {
    const tree = buildSessionTree(strippedReasoningSession());
    expectReconstructs(tree);
    const t2 = byId(tree, "t2");
    expect(t2.treeParent).toBeNull();
    expect(tree.segments[t2.segment]?.label).toBe("rewrite");
    expect(t2.inserted?.kind).toBe("harness");
    expect(t2.sharedPrefixTokens).toBe(byId(tree, "t1").record.promptTokens.length);
    expect(tree.disagreements).toEqual([]);
  });

  it("records a disagreement when parentCallId is not the token-verified parent", () => {
    const [a] = linearSession();
    const b = call({ callId: "b", prompt: extend(a as CallRecord, toolTurn("out")), completion: "done<|im_end|>", parentCallId: null });
    const c = call({ callId: "c", prompt: first("unrelated task"), completion: "hi<|im_end|>", parentCallId: "c1" });
    const tree = buildSessionTree([a as CallRecord, b, c]);
    expect(tree.disagreements.map((d) => [d.callId, d.recorded, d.verified])).toEqual([
      ["b", null, "c1"],
      ["c", "c1", null],
    ]);
    expect(tree.segments.map((s) => s.label)).toEqual(["main", "side"]);
  });

  it("labels calls with a non-main agent role as side branches", () => {
    const [a] = linearSession();
    const title = call({ callId: "title", agentRole: "title", prompt: enc("<|im_start|>system\nWrite a title.<|im_end|>\n"), completion: "Fix test<|im_end|>" });
    const tree = buildSessionTree([a as CallRecord, title]);
    expect(tree.segments.map((s) => s.label)).toEqual(["main", "side"]);
  });

  it("randomised sessions reproduce every call's prompt + completion along its path", () => {
    for (let seed = 1; seed <= 25; seed++) {
      const tree = buildSessionTree(randomSession(seed, 30));
      expectReconstructs(tree);
      expect(tree.calls).toHaveLength(30);
    }
  });
});
