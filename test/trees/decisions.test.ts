import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { CallRecord, SessionInfo } from "../../src/icr/records.js";
import { rolloutDecisions } from "../../src/trees/decisions.js";
import { buildForests } from "../../src/trees/forest.js";
import { completionMasks } from "../../src/trees/masks.js";
import type { RolloutForest } from "../../src/trees/types.js";
import { tok } from "./fixtures.js";

const captured = JSON.parse(readFileSync(join(import.meta.dirname, "fixtures", "captured-oracle.json"), "utf8")) as {
  sessions: SessionInfo[];
  records: CallRecord[];
  verifier: Record<string, { subscores: Record<string, number | number[]> }>;
};
const forests = buildForests(captured.records, captured.sessions);
const isSearch = (d: { toolCall: { arguments: string } }): boolean => d.toolCall.arguments.includes("./search");

function lookup(harness: string): RolloutForest {
  const f = forests.find((x) => x.rolloutId === `rollout-lookup-test-s0-0000-${harness}-0`);
  if (!f) throw new Error(`no ${harness} lookup rollout`);
  return f;
}

describe("decisions located by the recorded spans (captured lookup rollouts)", () => {
  for (const harness of ["chat-agent", "claw-agent", "resp-agent"]) {
    it(`${harness}: the k-th ./search decision's recorded action + args tokens are exactly that tool call`, () => {
      const f = lookup(harness);
      const hits = captured.verifier[f.rolloutId]?.subscores.search_hits as number[];
      const decisions = rolloutDecisions(f).filter(isSearch);
      expect(decisions).toHaveLength(hits.length);
      const byId = new Map(f.trees.flatMap((t) => t.calls.map((c) => [c.callId, c.record] as const)));
      for (const d of decisions) {
        const record = byId.get(d.callId) as CallRecord;
        const tc = completionMasks(record).toolCalls[d.toolCallIndex];
        expect(tc?.name).toBe(d.toolCall.name);
        const ids = [...(tc?.action ?? []), ...(tc?.args ?? [])].sort((a, b) => a - b).map((i) => record.completionTokens[i] as number);
        const text = tok.decode(ids);
        expect(text.startsWith("<tool_call>")).toBe(true);
        expect(text.endsWith("</tool_call>")).toBe(true);
        expect(text.match(/\.\/search/g)).toHaveLength(1);
        // Same value (the Anthropic echo re-serialises the arguments it was given as an object).
        expect(JSON.parse(tok.decode((tc?.args ?? []).map((i) => record.completionTokens[i] as number)))).toEqual(JSON.parse(d.toolCall.arguments));
      }
    });
  }

  it("central-agent: the searches are the sub-agents' decisions, in the order they were made", () => {
    const f = lookup("central-agent");
    const hits = captured.verifier[f.rolloutId]?.subscores.search_hits as number[];
    const sub = rolloutDecisions(f, { labels: ["sub-agent"] }).filter(isSearch);
    expect(sub).toHaveLength(hits.length);
    expect(new Set(sub.map((d) => d.label))).toEqual(new Set(["sub-agent"]));
    const main = rolloutDecisions(f, { labels: ["main"] });
    expect(main.map((d) => d.toolCall.name)).toEqual(["researcher", "researcher", "worker"]);
    const all = rolloutDecisions(f);
    for (let i = 1; i < all.length; i++) expect((all[i] as { receivedAt: number }).receivedAt).toBeGreaterThanOrEqual((all[i - 1] as { receivedAt: number }).receivedAt);
  });
});
