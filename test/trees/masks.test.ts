import { describe, expect, it } from "vitest";
import { buildBatch } from "../../src/batch/build.js";
import { UserError } from "../../src/core/errors.js";
import { buildForests } from "../../src/trees/forest.js";
import { isValidCall } from "../../src/trees/filter.js";
import { completionMasks } from "../../src/trees/masks.js";
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

/** A record as the proxy writes it (fixtures.ts: spans from the proxy's own parse). */
function sampled(completion: string) {
  return call({ callId: "m", prompt: first("write it"), completion });
}

describe("action / args masks from the spans recorded at the proxy", () => {
  const writeCall = toolCall("write", { path: "日本.txt", text: "é🙂" });
  const second = toolCall("bash", { cmd: "ls" });
  const text = `<think>\nplan ✓\n</think>\n${writeCall}\n${second}<|im_end|>`;

  it("marks the name, control tags and JSON around the name as action and the argument value as args, exactly, with multi-byte characters", () => {
    const ids = enc(text);
    const m = completionMasks(sampled(text));
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
    const plain = completionMasks(sampled("Just an answer é.<|im_end|>"));
    expect(ones(plain.action)).toEqual([]);
    expect(ones(plain.args)).toEqual([]);
    const bad = completionMasks(sampled('<tool_call>{"name": "bash", "arguments": {</tool_call><|im_end|>'));
    expect(bad.malformed).toBe(1);
    expect(ones(bad.action)).toEqual([]);
  });

  it("validity reads the recorded malformed count: it rejects truncated and malformed calls", () => {
    const valid = isValidCall;
    const [r1, r2] = retrySession();
    expect(valid(r1 as never)).toBe(true);
    expect(valid(r2 as never)).toBe(false);
    expect(valid({ ...(r1 as object), finishReason: "length" } as never)).toBe(false);
  });

  it("carries the masks into batch rows on the sampled tokens only", () => {
    const rec = call({ callId: "m", prompt: first("write it"), completion: text });
    const built = buildBatch(buildForests([rec]), { layout: "flat" });
    const row = built.batch.rows[0];
    const m = completionMasks(rec);
    const offset = rec.promptTokens.length;
    expect(ones(row?.actionMask as Uint8Array)).toEqual(ones(m.action).map((i) => i + offset));
    expect(ones(row?.argsMask as Uint8Array)).toEqual(ones(m.args).map((i) => i + offset));
  });
});

describe("outcome rewards", () => {
  it("puts each rollout's outcome on its paths", () => {
    const rec = call({ callId: "p", prompt: first("go"), completion: `日本 ${toolCall("bash", { cmd: "ls" })}<|im_end|>` });
    const built = buildBatch(buildForests([rec]), { layout: "tree", outcome: new Map([["rol_1", 0.75]]) });
    expect(built.index.paths[0]?.outcomeReward).toBe(0.75);
    expect(buildBatch(buildForests([rec]), { layout: "tree" }).index.paths[0]?.outcomeReward).toBe(0);
  });
});

describe("records from ICR schema 1 (no spans)", () => {
  it("are refused with a UserError telling to re-record, never given empty masks", () => {
    const rec = { ...sampled(toolCall("bash", { cmd: "ls" }) + "<|im_end|>"), schemaVersion: 1, spans: null };
    for (const run of [() => completionMasks(rec), () => isValidCall(rec), () => buildBatch(buildForests([rec]), { layout: "tree" })]) {
      let err: unknown;
      try {
        run();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UserError);
      expect((err as UserError).code).toBe("record_without_spans");
      expect((err as UserError).message).toMatch(/re-record/);
    }
    // A call that sampled nothing (an engine error) has nothing to locate.
    expect(completionMasks({ ...rec, completionTokens: [], logprobs: [] }).toolCalls).toEqual([]);
  });
});
