import { expect } from "vitest";
import { pathTokens, treePaths } from "../../src/trees/paths.js";
import { tokensTo } from "../../src/trees/radix.js";
import type { SessionTree, TreeCall } from "../../src/trees/types.js";

function byId(tree: SessionTree, id: string): TreeCall {
  const c = tree.calls[tree.callIndex.get(id) as number];
  if (!c) throw new Error(`no call ${id}`);
  return c;
}

/** The reconstruction property: every call's prompt and prompt + completion are root paths of the tree, token for token. */
export function expectReconstructs(tree: SessionTree): void {
  for (const c of tree.calls) {
    expect(tokensTo(tree.nodes, c.promptEndNode)).toEqual(c.record.promptTokens);
    expect(tokensTo(tree.nodes, c.endNode)).toEqual([...c.record.promptTokens, ...c.record.completionTokens]);
  }
  for (const p of treePaths(tree)) {
    const { tokens } = pathTokens(tree, p.nodes);
    expect(tokens).toEqual([...p.leafCall.record.promptTokens, ...p.leafCall.record.completionTokens]);
    for (const c of p.calls) {
      const seq = [...c.record.promptTokens, ...c.record.completionTokens];
      expect(tokens.slice(0, seq.length)).toEqual(seq);
    }
  }
  // Sampled runs carry the logprobs of the call that sampled them, at the right offsets.
  for (const n of tree.nodes) {
    if (n.role !== "sampled") continue;
    const owner = byId(tree, n.callId as string).record;
    for (let i = 0; i < n.end - n.start; i++) {
      expect(owner.completionTokens[n.sampleOffset + i]).toBe(n.src[n.start + i]);
      expect(owner.promptTokens.length + n.sampleOffset + i).toBe(n.depth + i);
    }
  }
}

