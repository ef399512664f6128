import { describe, expect, it } from "vitest";
import { fillAdvantages } from "../../src/batch/advantage-slots.js";
import type { BuiltBatch } from "../../src/batch/batch-index.js";
import { buildBatch } from "../../src/batch/build.js";
import type { PackedRow } from "../../src/batch/types.js";
import { buildForests } from "../../src/trees/forest.js";
import type { CallRecord } from "../../src/icr/records.js";
import { call, compactionSession, editedHistorySession, enc, linearSession, parallelSession, randomSession, retrySession, strippedReasoningSession, subAgentRollout } from "../trees/fixtures.js";

interface TokenData {
  token: number;
  trainable: number;
  oldLogprob: number;
  version: number;
  action: number;
  args: number;
  position: number;
}

/** Reads one path out of a row by following parent pointers from its leaf token. */
function readPath(row: PackedRow, leaf: number): TokenData[] {
  const out: TokenData[] = [];
  for (let i = leaf; i >= 0; i = row.parent[i] as number) {
    out.push({
      token: row.tokens[i] as number,
      trainable: row.trainable[i] as number,
      oldLogprob: row.oldLogprobs[i] as number,
      version: row.policyVersion[i] as number,
      action: row.actionMask[i] as number,
      args: row.argsMask[i] as number,
      position: row.positions[i] as number,
    });
  }
  return out.reverse();
}

function pathsOf(b: BuiltBatch): Map<string, TokenData[]> {
  const m = new Map<string, TokenData[]>();
  for (const p of b.index.paths) m.set(`${p.sessionId}/${p.leafCallId}`, readPath(b.batch.rows[p.row] as PackedRow, p.leafToken));
  return m;
}

function expectRowInvariants(row: PackedRow): void {
  for (let i = 0; i < row.tokens.length; i++) {
    const p = row.parent[i] as number;
    expect(p).toBeLessThan(i);
    expect(row.positions[i]).toBe(p < 0 ? 0 : (row.positions[p] as number) + 1);
    if (p < 0) expect(row.trainable[i]).toBe(0);
    if (row.trainable[i] === 0) expect(row.lossWeights[i]).toBe(0);
  }
}

const fixtures: [string, CallRecord[]][] = [
  ["linear", linearSession()],
  ["parallel", parallelSession()],
  ["sub-agents", subAgentRollout()],
  ["compaction", compactionSession()],
  ["retry", retrySession()],
  ["edited history", editedHistorySession()],
  ["stripped reasoning", strippedReasoningSession()],
  ["random", [...randomSession(7, 40, "s_a", "r_a"), ...randomSession(8, 25, "s_b", "r_b")]],
];

describe("flat and tree-packed layouts", () => {
  for (const [name, recs] of fixtures) {
    it(`${name}: both layouts carry identical per-token data on every path, and each path is its leaf call's tokens`, () => {
      const forests = buildForests(recs);
      const opts = { filter: { deadLeaves: false, maxBranches: null } } as const;
      const flat = buildBatch(forests, { ...opts, layout: "flat" });
      const tree = buildBatch(forests, { ...opts, layout: "tree", tokenBudget: 4096 });
      const fp = pathsOf(flat);
      const tp = pathsOf(tree);
      expect([...tp.keys()].sort()).toEqual([...fp.keys()].sort());
      for (const [key, data] of fp) expect(tp.get(key)).toEqual(data);
      const byId = new Map(recs.map((r) => [r.callId, r]));
      for (const p of flat.index.paths) {
        const leaf = byId.get(p.leafCallId) as CallRecord;
        expect(fp.get(`${p.sessionId}/${p.leafCallId}`)?.map((t) => t.token)).toEqual([...leaf.promptTokens, ...leaf.completionTokens]);
      }
      for (const b of [flat, tree]) for (const row of b.batch.rows) expectRowInvariants(row);
      // Same total loss weight: a shared trainable token weighs as much as its copies in the flat rows.
      const weight = (b: BuiltBatch): number => b.batch.rows.reduce((s, r) => s + r.lossWeights.reduce((a, x) => a + x, 0), 0);
      expect(weight(tree)).toBe(weight(flat));
      expect(tree.stats.trainableTokens).toBe(flat.stats.trainableTokens);
      expect(tree.stats.emittedTokens).toBe(tree.stats.uniqueTokens - tree.stats.sharedRootTokens);
      expect(flat.stats.emittedTokens).toBe(flat.stats.flatTokens);
    });
  }

  it("every sampled token is trainable exactly once with its recorded logprob and version; context never is", () => {
    const recs = compactionSession();
    const built = buildBatch(buildForests(recs), { layout: "tree", filter: { deadLeaves: false } });
    const byId = new Map(recs.map((r) => [r.callId, r]));
    const seen = new Set<string>();
    built.batch.rows.forEach((row, r) => {
      const ix = built.index.rows[r];
      for (let i = 0; i < row.tokens.length; i++) {
        if (row.trainable[i] !== 1) continue;
        const call = built.index.calls[ix?.call[i] as number];
        const rec = byId.get(call?.callId as string) as CallRecord;
        const off = ix?.offset[i] as number;
        expect(row.tokens[i]).toBe(rec.completionTokens[off]);
        expect(row.oldLogprobs[i]).toBeCloseTo(rec.logprobs[off] as number, 6);
        expect(row.policyVersion[i]).toBe(rec.policyVersion);
        seen.add(`${rec.callId}:${off}`);
      }
    });
    expect(seen.size).toBe(recs.reduce((s, r) => s + r.completionTokens.length, 0));
    expect(built.stats.trainableTokens).toBe(seen.size);
    expect(built.stats.trainableByPolicyVersion).toEqual({ "3": seen.size });
  });

  it("dedups shared prefixes: a 5-turn session packs to well under a third of its flat tokens", () => {
    // Paths of a linear session share everything, so only the leaf path remains: make 5 retries of the last turn instead.
    const recs = linearSession();
    const last = recs[4] as CallRecord;
    const branches = [0, 1, 2, 3].map((k) => ({ ...last, callId: `c5_${k}`, completionTokens: [...last.completionTokens.slice(0, -1), 65 + k], logprobs: last.logprobs }));
    const built = buildBatch(buildForests([...recs, ...branches]), { layout: "tree", filter: { deadLeaves: false } });
    expect(built.stats.paths).toBe(5);
    expect(built.stats.dedupRatio).toBeLessThan(1 / 3);
    expect(built.stats.uniqueTokens).toBe(built.stats.emittedTokens);
  });

  it("a GRPO group's rollouts share their identical system prompt + task in a row, and every path still reads back exactly", () => {
    const group = [0, 1, 2, 3].flatMap((k) => linearSession(`ses_${k}`, `rol_${k}`, `g${k}_`));
    const forests = buildForests(group);
    const prompt = (group[0] as CallRecord).promptTokens.length;
    const shared = buildBatch(forests, { layout: "tree" });
    const separate = buildBatch(forests, { layout: "tree", shareRootPrefixes: false });
    const flat = buildBatch(forests, { layout: "flat" });
    expect(shared.batch.rows).toHaveLength(1);
    expect(shared.stats.sharedRootTokens).toBe(3 * prompt);
    expect(shared.stats.emittedTokens).toBe(separate.stats.emittedTokens - 3 * prompt);
    expect(separate.stats.sharedRootTokens).toBe(0);
    expect(pathsOf(shared)).toEqual(pathsOf(flat));
    expect(pathsOf(separate)).toEqual(pathsOf(flat));
    for (const row of shared.batch.rows) expectRowInvariants(row);
  });

  it("a GRPO group whose trees fit a row only with their prompt shared goes into one row (first-fit counts the shared root once)", () => {
    // Real harnesses: a 15k-token first prompt and short turns; a row of 2 × prompt could not hold 4 unshared copies.
    const group = [0, 1, 2, 3].flatMap((k) => linearSession(`ses_${k}`, `rol_${k}`, `g${k}_`));
    const forests = buildForests(group);
    const one = buildBatch(forests, { layout: "tree" });
    expect(one.batch.rows).toHaveLength(1);
    const rowLength = one.batch.rows[0]!.tokens.length;
    expect(rowLength).toBe(one.stats.uniqueTokens - one.stats.sharedRootTokens);
    expect(one.stats.sharedRootTokens).toBeGreaterThan(0);
    const tight = buildBatch(forests, { layout: "tree", tokenBudget: rowLength });
    expect(tight.batch.rows).toHaveLength(1);
    expect(tight.stats.sharedRootTokens).toBe(one.stats.sharedRootTokens);
    expect(pathsOf(tight)).toEqual(pathsOf(one));
    // One token less and the last tree needs a row of its own; no row exceeds the budget.
    const under = buildBatch(forests, { layout: "tree", tokenBudget: rowLength - 1 });
    expect(under.batch.rows).toHaveLength(2);
    for (const row of under.batch.rows) expect(row.tokens.length).toBeLessThanOrEqual(rowLength - 1);
    expect(pathsOf(under)).toEqual(pathsOf(one));
  });

  it("sessions that call the model from two system prompts (Qwen Code's task and its memory agent) share both prompts in one row", () => {
    // Measured through Qwen Code 0.24.4: its main calls (16.9k tokens) and its memory agent's calls (10k) share only a
    // few tokens, so a session tree's context splits right after its root. Sharing only the root node put every
    // session in a row of its own (24 sessions: 618k tokens emitted for 635k unique).
    const head = "<|im_start|>system\nYou are ";
    const main = enc(`${head}${"main system prompt ".repeat(400)}`);
    const aux = enc(`${head}${"memory agent prompt ".repeat(300)}`);
    const group = [0, 1, 2, 3].flatMap((k) => [
      call({ callId: `main_${k}`, sessionId: `ses_q${k}`, rolloutId: `rol_q${k}`, prompt: [...main, ...enc(`task ${k} `)], completion: `answer ${k} `.repeat(8) }),
      call({ callId: `mem_${k}`, sessionId: `ses_q${k}`, rolloutId: `rol_q${k}`, prompt: [...aux, ...enc(`history ${k} `)], completion: `memory ${k} `.repeat(8) }),
    ]);
    const forests = buildForests(group);
    const flat = buildBatch(forests, { layout: "flat" });
    const separate = buildBatch(forests, { layout: "tree", shareRootPrefixes: false });
    // A row holds one session's two prompts plus a little: unshared, four sessions need four rows.
    const budget = main.length + aux.length + 1000;
    const shared = buildBatch(forests, { layout: "tree", tokenBudget: budget });
    expect(separate.stats.emittedTokens).toBeGreaterThan(4 * (main.length + aux.length) - 16);
    expect(shared.batch.rows).toHaveLength(1);
    expect(shared.stats.emittedTokens).toBeLessThanOrEqual(budget);
    expect(shared.stats.sharedRootTokens).toBeGreaterThanOrEqual(3 * (main.length + aux.length - 8));
    expect(shared.stats.emittedTokens).toBe(shared.stats.uniqueTokens - shared.stats.sharedRootTokens);
    expect(pathsOf(shared)).toEqual(pathsOf(flat));
    for (const row of shared.batch.rows) expectRowInvariants(row);
  });

  it("a GRPO group after a 32k-token prompt (a long real-harness context) packs into one row of more than 32k tokens, prompt once", () => {
    const prompt = enc("s".repeat(32_000));
    const group = [0, 1, 2, 3].map((k) => call({ callId: `long_${k}`, sessionId: `ses_long_${k}`, rolloutId: `rol_long_${k}`, prompt, completion: `answer ${k} `.repeat(50) }));
    const forests = buildForests(group);
    const completions = group.reduce((a, c) => a + c.completionTokens.length, 0);
    const one = buildBatch(forests, { layout: "tree", tokenBudget: 36_864 });
    expect(one.batch.rows).toHaveLength(1);
    expect(one.batch.rows[0]?.tokens.length).toBe(prompt.length + completions);
    expect(one.batch.rows[0]?.tokens.length).toBeGreaterThan(32_768);
    expect(one.stats.sharedRootTokens).toBe(3 * prompt.length);
    for (const row of one.batch.rows) expectRowInvariants(row);
    // With a row budget below the prompt every rollout is a row of its own and the prompt is repeated: long contexts
    // need `algorithm.row_tokens` ≥ prompt + the group's completions for the sharing.
    const apart = buildBatch(forests, { layout: "tree", tokenBudget: 4_096 });
    expect(apart.batch.rows).toHaveLength(4);
    const tokensOf = (b: BuiltBatch): string[] => [...pathsOf(b).values()].map((p) => p.map((t) => t.token).join(",")).sort();
    expect(tokensOf(apart)).toEqual(tokensOf(one));
  }, 180_000);

  it("packs several trees per row up to the budget and splits a tree that does not fit", () => {
    const recs = [...randomSession(3, 20, "s1", "r1"), ...randomSession(4, 20, "s2", "r2"), ...randomSession(5, 20, "s3", "r3")];
    const forests = buildForests(recs);
    const big = buildBatch(forests, { layout: "tree", tokenBudget: 1_000_000, filter: { deadLeaves: false, maxBranches: null } });
    expect(big.batch.rows).toHaveLength(1);
    expect([...((big.batch.meta.rowRollouts as string[][])[0] ?? [])].sort()).toEqual(["r1", "r2", "r3"]);
    const longest = Math.max(...big.index.paths.map((p) => p.length));
    const small = buildBatch(forests, { layout: "tree", tokenBudget: longest, filter: { deadLeaves: false, maxBranches: null } });
    expect(small.batch.rows.length).toBeGreaterThan(1);
    for (const row of small.batch.rows) expect(row.tokens.length).toBeLessThanOrEqual(longest);
    expect(pathsOf(small)).toEqual(pathsOf(big));
    expect(small.stats.oversizePaths).toBe(0);
  });

  it("reports statistics: branches, breaks by class, labels, filtered counts", () => {
    const recs = [...compactionSession(), ...retrySession().map((r) => ({ ...r, sessionId: "ses_r", rolloutId: "rol_2" })), ...editedHistorySession().map((r) => ({ ...r, sessionId: "ses_e", rolloutId: "rol_3" }))];
    const built = buildBatch(buildForests(recs), { layout: "tree" });
    expect(built.stats.breaks).toEqual({ compaction: 1, edited_history: 1 });
    expect(built.stats.filter.deadLeafCalls).toBe(1);
    expect(built.stats.labels.retry).toBe(1);
    expect(built.stats.paths).toBe(2 + 1 + 2);
    expect(built.stats.rollouts).toBe(3);
  });

  it("fills advantages through the slot hook: one path per token in flat rows, every leaf below it in tree rows", () => {
    const recs = retrySession();
    const forests = buildForests(recs);
    const tree = buildBatch(forests, { layout: "tree", filter: { deadLeaves: false }, outcome: { rol_1: 1 } });
    const sizes = new Map<string, number>();
    const n = fillAdvantages(tree, (s) => {
      sizes.set(s.call.callId, s.paths.length);
      return s.paths.reduce((a, p) => a + p.outcomeReward, 0) / s.paths.length + s.offset * 1e-3;
    });
    expect(n).toBe(tree.stats.trainableTokens);
    // r1 is shared by both paths (dead r2 and live r2b → r3); r3 only by one.
    expect(sizes.get("r1")).toBe(2);
    expect(sizes.get("r3")).toBe(1);
    const row = tree.batch.rows[0] as PackedRow;
    for (let i = 0; i < row.tokens.length; i++) {
      if (row.trainable[i] === 1) expect(row.advantages[i]).toBeCloseTo(1 + (tree.index.rows[0]?.offset[i] as number) * 1e-3, 5);
      else expect(row.advantages[i]).toBe(0);
    }
  });
});
