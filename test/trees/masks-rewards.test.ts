import { describe, expect, it } from "vitest";
import { buildBatch } from "../../src/batch/build.js";
import { UserError } from "../../src/core/errors.js";
import { buildForests } from "../../src/trees/forest.js";
import { completionMasks, parsedValidity } from "../../src/trees/masks.js";
import { alignProcessRewards } from "../../src/trees/rewards.js";
import { call, enc, first, retrySession, tok, toolCall } from "./fixtures.js";

/** Token indices [a, b) covering text[from, to) for the byte tokenizer (its tokens never straddle these boundaries). */
function tokenRange(text: string, from: number, to: number): number[] {
  const a = enc(text.slice(0, from)).length;
  const b = enc(text.slice(0, to)).length;
  return Array.from({ length: b - a }, (_, i) => a + i);
}

function ones(mask: Uint8Array): number[] {
  return [...mask.keys()].filter((i) => mask[i] === 1);
}

describe("action / args masks through character → token offsets", () => {
  const writeCall = toolCall("write", { path: "日本.txt", text: "é🙂" });
  const second = toolCall("bash", { cmd: "ls" });
  const text = `<think>\nplan ✓\n</think>\n${writeCall}\n${second}<|im_end|>`;

  it("marks the name, control tags and JSON around the name as action and the argument value as args, exactly, with multi-byte characters", () => {
    const ids = enc(text);
    const m = completionMasks(tok, ids);
    const expectedAction: number[] = [];
    const expectedArgs: number[] = [];
    for (const block of [writeCall, second]) {
      const start = text.indexOf(block);
      const argsText = JSON.stringify(block === writeCall ? { path: "日本.txt", text: "é🙂" } : { cmd: "ls" });
      const argsStart = text.indexOf(argsText, start);
      const args = tokenRange(text, argsStart, argsStart + argsText.length);
      expectedArgs.push(...args);
      expectedAction.push(...tokenRange(text, start, start + block.length).filter((i) => !args.includes(i)));
    }
    expect(ones(m.args)).toEqual(expectedArgs);
    expect(ones(m.action)).toEqual(expectedAction);
    // The multi-byte characters inside args are covered byte for byte: 日本 = 6 bytes, é = 2, 🙂 = 4.
    expect(tok.decode(ones(m.args).map((i) => ids[i] as number))).toBe('{"path":"日本.txt","text":"é🙂"}{"cmd":"ls"}');
    expect(tok.decode(ones(m.action).map((i) => ids[i] as number))).toBe('<tool_call>\n{"name":"write","arguments":}\n</tool_call><tool_call>\n{"name":"bash","arguments":}\n</tool_call>');
    expect(m.toolCalls.map((t) => t.name)).toEqual(["write", "bash"]);
    expect(m.malformed).toBe(0);
  });

  it("flags no tokens in a completion without tool calls, and counts a malformed block", () => {
    const plain = completionMasks(tok, enc("Just an answer é.<|im_end|>"));
    expect(ones(plain.action)).toEqual([]);
    expect(ones(plain.args)).toEqual([]);
    const bad = completionMasks(tok, enc('<tool_call>{"name": "bash", "arguments": {</tool_call><|im_end|>'));
    expect(bad.malformed).toBe(1);
    expect(ones(bad.action)).toEqual([]);
  });

  it("the parser-backed validity rejects truncated and malformed calls", () => {
    const valid = parsedValidity(tok);
    const [r1, r2] = retrySession();
    expect(valid(r1 as never)).toBe(true);
    expect(valid(r2 as never)).toBe(false);
    expect(valid({ ...(r1 as object), finishReason: "length" } as never)).toBe(false);
  });

  it("carries the masks into batch rows on the sampled tokens only", () => {
    const rec = call({ callId: "m", prompt: first("write it"), completion: text });
    const built = buildBatch(buildForests([rec]), { layout: "flat", tokenizer: tok });
    const row = built.batch.rows[0];
    const m = completionMasks(tok, rec.completionTokens);
    const offset = rec.promptTokens.length;
    expect(ones(row?.actionMask as Uint8Array)).toEqual(ones(m.action).map((i) => i + offset));
    expect(ones(row?.argsMask as Uint8Array)).toEqual(ones(m.args).map((i) => i + offset));
  });
});

describe("process rewards onto tokens", () => {
  const rec = call({ callId: "p", prompt: first("go"), completion: `日本 ${toolCall("bash", { cmd: "ls" })}<|im_end|>` });
  const lookup = (id: string) => (id === "p" ? rec : undefined);
  const n = rec.completionTokens.length;

  it("maps call, token-range, char-range and tool-call targets, adding overlapping rewards", () => {
    const out = alignProcessRewards(
      [
        { callId: "p", value: 1 },
        { callId: "p", value: 0.5, target: { kind: "tokens", start: 0, end: 2 } },
        { callId: "p", value: 2, target: { kind: "chars", start: 1, end: 2 } }, // "本": bytes 3..6
        { callId: "p", value: 10, target: { kind: "tool_call", index: 0, part: "action" } },
      ],
      lookup,
      tok,
    );
    const r = out.get("p") as Float32Array;
    expect(r).toHaveLength(n);
    const m = completionMasks(tok, rec.completionTokens);
    for (let i = 0; i < n; i++) {
      const expected = 1 + (i < 2 ? 0.5 : 0) + (i >= 3 && i < 6 ? 2 : 0) + (m.action[i] === 1 ? 10 : 0);
      expect(r[i]).toBeCloseTo(expected, 6);
    }
  });

  it("rejects unknown calls, out-of-range spans and char targets without a tokenizer with user errors", () => {
    expect(() => alignProcessRewards([{ callId: "nope", value: 1 }], lookup)).toThrow(UserError);
    expect(() => alignProcessRewards([{ callId: "p", value: 1, target: { kind: "tokens", start: 0, end: n + 1 } }], lookup)).toThrow(/outside/);
    expect(() => alignProcessRewards([{ callId: "p", value: 1, target: { kind: "chars", start: 0, end: 1 } }], lookup)).toThrow(/tokenizer/);
    expect(() => alignProcessRewards([{ callId: "p", value: Number.NaN }], lookup)).toThrow(UserError);
  });

  it("puts outcome rewards on paths and process rewards on the batch index", () => {
    const built = buildBatch(buildForests([rec]), { layout: "tree", tokenizer: tok, rewards: { outcome: new Map([["rol_1", 0.75]]), process: [{ callId: "p", value: 3, target: { kind: "tool_call", index: 0 } }] } });
    expect(built.index.paths[0]?.outcomeReward).toBe(0.75);
    const ix = built.index.rows[0];
    const row = built.batch.rows[0];
    const flagged = [...(ix?.processReward ?? [])].filter((x) => x === 3).length;
    const masked = [...(row?.actionMask ?? [])].filter((x) => x === 1).length + [...(row?.argsMask ?? [])].filter((x) => x === 1).length;
    expect(flagged).toBe(masked);
    expect(masked).toBeGreaterThan(0);
  });
});
