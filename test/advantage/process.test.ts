import { describe, expect, it, vi } from "vitest";
import { applyAdvantages, decisionsOf, mainAgentCalls, parseAdvantageConfig } from "../../src/advantage/index.js";
import { buildBatch } from "../../src/batch/build.js";
import type { CallRecord } from "../../src/icr/records.js";
import { ByteTokenizer } from "../../src/tokenizer/bytes.js";
import { HfBpeTokenizer } from "../../src/tokenizer/hf-bpe.js";
import { buildForests } from "../../src/trees/forest.js";
import { sideConversationSession, subAgentRollout } from "../trees/fixtures.js";
import { rec, result, tok } from "./fixtures.js";
import { byToken } from "./helpers.js";

const tc = (name: string): string => `<tool_call>\n{"name": "${name}", "arguments": {"q": "x"}}\n</tool_call>`;
const SEARCH = `ok ${tc("search")}`;
const READ = tc("read");
const ANSWER = "done";

/** A linear session: call k's prompt = call k−1's prompt + completion + a tool output. */
function chain(rolloutId: string, completions: string[]): CallRecord[] {
  let prompt = tok.encode("<|im_start|>user\nq<|im_end|>\n");
  return completions.map((c, k) => {
    const r = rec({ callId: `${rolloutId}_${k}`, rolloutId, prompt, completion: c });
    prompt = [...prompt, ...r.completionTokens, ...tok.encode(`\nresult ${k}\n`)];
    return r;
  });
}

/** Mean advantage per call (all its tokens must agree unless `split`). */
function perCall(view: ReturnType<typeof byToken>): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const [key, v] of view) {
    const call = key.slice(0, key.lastIndexOf(":"));
    const list = out.get(call) ?? [];
    list.push(...v.adv);
    out.set(call, list);
  }
  return out;
}

function uniform(view: ReturnType<typeof byToken>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [call, advs] of perCall(view)) {
    for (const a of advs) expect(a, call).toBeCloseTo(advs[0] as number, 6);
    out[call] = advs[0] as number;
  }
  return out;
}

// r1 = 1 with two searches (hits 1, 1); r2 = 0 with searches at decisions 0, 1, 2 (hits 0, 0, 1) around a `read`;
// r3 = 0.5 with one search (hit 1). Outcome centred without std: +0.5, −0.5, 0. c_p = 0.5.
const searchRecords = [...chain("r1", [SEARCH, SEARCH, ANSWER]), ...chain("r2", [SEARCH, READ, SEARCH, SEARCH, ANSWER]), ...chain("r3", [SEARCH, ANSWER])];
const searchResults = [result("r1", "t", "h", 1, "ok", { search_hits: [1, 1] }), result("r2", "t", "h", 0, "ok", { search_hits: [0, 0, 1] }), result("r3", "t", "h", 0.5, "ok", { search_hits: [1] })];
const eps = 1e-6;
// Decision 0: hits 1, 0, 1 → mean 2/3, std √(2/9). Decision 1: r1 = 1, r2 = 0 → ±1 (std 0.5). Decision 2: r2 alone → 0.
const k0 = { hit: 1 / 3 / (Math.sqrt(2 / 9) + eps), miss: -2 / 3 / (Math.sqrt(2 / 9) + eps) };
const k1 = 0.5 / (0.5 + eps);

describe("process + outcome advantages (Harness-RL form)", () => {
  it("search_hits entry k goes to the k-th search call; the process term is normalised across the group at each k", () => {
    const forests = buildForests(searchRecords);
    const built = buildBatch(forests, { layout: "tree" });
    const config = parseAdvantageConfig({ normalizeStd: false, process: { subscore: "search_hits", decisions: "tool", tool: "search", coef: 0.5 } });
    const out = applyAdvantages({ built, results: searchResults, forests, config });
    expect(uniform(byToken(built))).toEqual({
      r1_0: expect.closeTo(0.5 + 0.5 * k0.hit, 5),
      r1_1: expect.closeTo(0.5 + 0.5 * k1, 5),
      r1_2: expect.closeTo(0.5, 5),
      r2_0: expect.closeTo(-0.5 + 0.5 * k0.miss, 5),
      r2_1: expect.closeTo(-0.5, 5),
      r2_2: expect.closeTo(-0.5 - 0.5 * k1, 5),
      r2_3: expect.closeTo(-0.5, 5),
      r2_4: expect.closeTo(-0.5, 5),
      r3_0: expect.closeTo(0.5 * k0.hit, 5),
      r3_1: expect.closeTo(0, 5),
    });
    expect(out.stats.process).toMatchObject({ decisions: 6, unmappedEntries: 0, missingLists: 0 });
  });

  it("target masks: only the deciding tool call's action/args tokens carry the process term", () => {
    const forests = buildForests(searchRecords);
    const built = buildBatch(forests, { layout: "flat" });
    const config = parseAdvantageConfig({ normalizeStd: false, process: { subscore: "search_hits", decisions: "tool", tool: "search", coef: 0.5, target: "masks" } });
    applyAdvantages({ built, results: searchResults, forests, config });
    const view = byToken(built);
    const r10 = [...view].filter(([k]) => k.startsWith("r1_0:")).map(([k, v]) => [Number(k.split(":")[1]), v.adv[0] as number] as const);
    r10.sort((a, b) => a[0] - b[0]);
    // "ok " (3 byte tokens) precedes the tool call: outcome only; the block's tokens add c_p · A_process.
    expect(r10.slice(0, 3).map(([, a]) => a)).toEqual([0.5, 0.5, 0.5].map((x) => expect.closeTo(x, 6)));
    const inBlock = r10.slice(3).map(([, a]) => a);
    expect(inBlock.length).toBeGreaterThan(20);
    for (const [i, a] of inBlock.entries()) expect(a, `token ${i + 3} of ${JSON.stringify(SEARCH)}`).toBeCloseTo(0.5 + 0.5 * k0.hit, 5);
  });

  it("the batch path never touches a tokenizer: filters, masks, batches and masked process terms come from the recorded spans", () => {
    const forests = buildForests(searchRecords);
    const config = parseAdvantageConfig({ normalizeStd: false, process: { subscore: "search_hits", decisions: "tool", tool: "search", coef: 0.5, target: "masks" } });
    const run = (): { rows: number[][]; masks: number[][] } => {
      const built = buildBatch(forests, { layout: "tree" });
      applyAdvantages({ built, results: searchResults, forests, config });
      return { rows: built.batch.rows.map((r) => [...r.advantages]), masks: built.batch.rows.map((r) => [...r.actionMask, ...r.argsMask]) };
    };
    const before = run();
    // Every tokenizer the policy could have now throws on use (the byte codec is also the default codec).
    const spies = [ByteTokenizer.prototype, HfBpeTokenizer.prototype].flatMap((proto) =>
      (["encode", "decode", "tokenBytes"] as const).map((m) =>
        vi.spyOn(proto, m).mockImplementation(() => {
          throw new Error(`the batch path called ${m}`);
        }),
      ),
    );
    try {
      const after = run();
      expect(after).toEqual(before);
      expect(before.masks.flat().some((x) => x === 1)).toBe(true);
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it("decisions = calls: entry k goes to the main agent's k-th call; indices reached by one member get 0", () => {
    const records = [...chain("a", [SEARCH, ANSWER]), ...chain("b", [SEARCH, READ, ANSWER])];
    const results = [result("a", "t", "h", 1, "ok", { steps: [1, 1] }), result("b", "t", "h", 0, "ok", { steps: [0, 1, 1] })];
    const forests = buildForests(records);
    const built = buildBatch(forests);
    const config = parseAdvantageConfig({ normalizeStd: false, process: { subscore: "steps", normalizeStd: false } });
    const out = applyAdvantages({ built, results, forests, config });
    // k = 0: 1 vs 0 → ±0.5; k = 1: both 1 → 0; k = 2: b alone → 0.
    expect(uniform(byToken(built))).toEqual({ a_0: expect.closeTo(1, 6), a_1: expect.closeTo(0.5, 6), b_0: expect.closeTo(-1, 6), b_1: expect.closeTo(-0.5, 6), b_2: expect.closeTo(-0.5, 6) });
    expect(out.stats.process?.decisions).toBe(5);
  });

  it("a rollout without the sub-score list keeps its outcome advantage and is counted", () => {
    const forests = buildForests(searchRecords);
    const built = buildBatch(forests);
    const results = [searchResults[0], result("r2", "t", "h", 0), searchResults[2]].filter((r) => r !== undefined);
    const config = parseAdvantageConfig({ normalizeStd: false, process: { subscore: "search_hits", decisions: "tool", tool: "search", coef: 0.5 } });
    const out = applyAdvantages({ built, results, forests, config });
    expect(out.stats.process?.missingLists).toBe(1);
    const calls = uniform(byToken(built));
    for (let k = 0; k < 5; k++) expect(calls[`r2_${k}`]).toBeCloseTo(-0.5, 6);
    // Decision 0 now compares r1 and r3 only (both hits): no spread, no process term.
    expect(calls.r1_0).toBeCloseTo(0.5, 6);
  });

  it("main-agent decisions skip superseded retries (the harness re-asked with the same prompt)", () => {
    const first = chain("x", [SEARCH, ANSWER]);
    const retry = rec({ callId: "x_0b", rolloutId: "x", prompt: (first[0] as CallRecord).promptTokens, completion: SEARCH });
    const t0 = (first[0] as CallRecord).timings.receivedAt;
    retry.timings = { ...retry.timings, receivedAt: t0 + 0.5 };
    const forest = buildForests([first[0] as CallRecord, retry, first[1] as CallRecord])[0];
    if (!forest) throw new Error("no forest");
    expect(mainAgentCalls(forest).map((c) => c.callId)).toEqual(["x_0b", "x_1"]);
    expect(decisionsOf(forest, { decisions: "tool", tool: "search" })).toEqual([{ index: 0, callId: "x_0b", toolCall: 0 }]);
  });

  it("sub-agent calls are not the main agent's decisions", () => {
    const forest = buildForests(subAgentRollout())[0];
    if (!forest) throw new Error("no forest");
    expect(mainAgentCalls(forest).map((c) => c.callId)).toEqual(["m1", "m2"]);
    expect(decisionsOf(forest, { decisions: "tool", tool: "task" }).map((d) => d.callId)).toEqual(["m1"]);
    // The sub-agent's `read` is not a main-agent decision.
    expect(decisionsOf(forest, { decisions: "tool", tool: "read" })).toEqual([]);
  });

  it("a side conversation's rewritten turns are not the main agent's decisions either", () => {
    const forest = buildForests(sideConversationSession())[0];
    if (!forest) throw new Error("no forest");
    expect(mainAgentCalls(forest).map((c) => c.callId)).toEqual(["q1", "q2", "q3"]);
    expect(decisionsOf(forest, { decisions: "tool", tool: "write" })).toEqual([]);
  });
});
