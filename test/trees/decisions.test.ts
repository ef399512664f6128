import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildBatch } from "../../src/batch/build.js";
import type { CallRecord, SessionInfo } from "../../src/icr/records.js";
import { decisionRewards, rolloutDecisions } from "../../src/trees/decisions.js";
import { buildForests } from "../../src/trees/forest.js";
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

describe("per-decision process rewards from verifier sub-scores (captured lookup rollouts)", () => {
  for (const harness of ["chat-agent", "claw-agent", "resp-agent"]) {
    it(`${harness}: the k-th search_hits entry lands on the k-th ./search tool call's tokens`, () => {
      const f = lookup(harness);
      const hits = captured.verifier[f.rolloutId]?.subscores.search_hits as number[];
      const decisions = rolloutDecisions(f);
      const { rewards, unmatchedValues, unmatchedDecisions } = decisionRewards(decisions, hits.map((h, k) => h + k), { match: isSearch, source: "search_hits" });
      expect([rewards.length, unmatchedValues, unmatchedDecisions]).toEqual([hits.length, 0, 0]);
      const built = buildBatch([f], { layout: "tree", tokenizer: tok, rewards: { process: rewards } });
      // Decode the rewarded tokens per value: each must be exactly one ./search tool call (action + args).
      const row = built.batch.rows[0];
      const ix = built.index.rows[0];
      if (!row || !ix) throw new Error("empty batch");
      hits.forEach((h, k) => {
        const ids: number[] = [];
        for (let i = 0; i < row.tokens.length; i++) if (Math.abs((ix.processReward[i] as number) - (h + k)) < 1e-6) ids.push(row.tokens[i] as number);
        const text = tok.decode(ids);
        expect(text.startsWith("<tool_call>")).toBe(true);
        expect(text.endsWith("</tool_call>")).toBe(true);
        expect(text.match(/\.\/search/g)).toHaveLength(1);
      });
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

  it("counts values and decisions that do not pair up instead of guessing", () => {
    const decisions = rolloutDecisions(lookup("chat-agent"));
    const r = decisionRewards(decisions, [1, 0, 1, 1, 1], { match: isSearch, part: "args" });
    expect([r.rewards.length, r.unmatchedValues, r.unmatchedDecisions]).toEqual([2, 3, 0]);
    expect(r.rewards.every((x) => x.target?.kind === "tool_call" && x.target.part === "args")).toBe(true);
  });
});
