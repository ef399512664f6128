import { describe, expect, it } from "vitest";
import { defaultCodec } from "../../src/chat/codec.js";
import { parseAssistantOutput } from "../../src/chat/parse-output.js";
import { renderAssistantTurn } from "../../src/chat/render-turn.js";
import { tokenMask, tokenSpans } from "../../src/chat/token-spans.js";
import { ByteTokenizer } from "../../src/tokenizer/bytes.js";
import { HfBpeTokenizer, tokenizerJsonSchema } from "../../src/tokenizer/hf-bpe.js";
import type { Tokenizer } from "../../src/tokenizer/types.js";
import { tokenizerJson } from "../tokenizer/fixtures.js";
import { randomArgs, randomText, rng } from "./conversations.js";

const bytes = new ByteTokenizer();

describe("tokenSpans", () => {
  it("maps byte tokens of one multi-byte character onto that character", () => {
    const ids = bytes.encode("aé😀<|im_end|>");
    expect(ids).toEqual([97, 0xc3, 0xa9, 0xf0, 0x9f, 0x98, 0x80, 258]);
    expect(tokenSpans(bytes, ids)).toEqual([
      { start: 0, end: 1 },
      { start: 1, end: 2 },
      { start: 1, end: 2 },
      { start: 2, end: 4 },
      { start: 2, end: 4 },
      { start: 2, end: 4 },
      { start: 2, end: 4 },
      { start: 4, end: 14 },
    ]);
  });

  it("maps invalid bytes to the U+FFFD they decode to", () => {
    const ids = [0x41, 0xe2, 0x82, 0x41, 0xff];
    expect(bytes.decode(ids)).toBe("A\ufffdA\ufffd");
    expect(tokenSpans(bytes, ids)).toEqual([
      { start: 0, end: 1 },
      { start: 1, end: 2 },
      { start: 1, end: 2 },
      { start: 2, end: 3 },
      { start: 3, end: 4 },
    ]);
  });

  it("covers decode(ids) in order: every span is within the text, starts never decrease, the last ends at the end", () => {
    const r = rng(21);
    const hf = new HfBpeTokenizer(tokenizerJsonSchema.parse(tokenizerJson()));
    for (const tok of [bytes, hf] as Tokenizer[]) {
      for (let i = 0; i < 200; i++) {
        const text = randomText(r, 10) + (r() < 0.5 ? "<|im_end|>" : "");
        const ids = tok.encode(text);
        const spans = tokenSpans(tok, ids);
        const decoded = tok.decode(ids);
        expect(spans).toHaveLength(ids.length);
        let prevStart = 0;
        for (const [k, s] of spans.entries()) {
          expect(s.start).toBeGreaterThanOrEqual(prevStart);
          expect(s.end).toBeLessThanOrEqual(decoded.length);
          // A token that is whole characters decodes on its own to exactly its span.
          const own = tok.decode([ids[k] as number]);
          if (!own.includes("\ufffd")) expect(decoded.slice(s.start, s.end)).toBe(own);
          prevStart = s.start;
        }
        if (ids.length > 0) expect(spans.at(-1)?.end).toBe(decoded.length);
      }
    }
  });

  it("maps merged BPE tokens to the characters they spell", () => {
    const hf = new HfBpeTokenizer(tokenizerJsonSchema.parse(tokenizerJson()));
    const ids = hf.encode("hello é world");
    expect(ids).toEqual([259, 32, 263, 262, 108, 100]);
    expect(tokenSpans(hf, ids)).toEqual([
      { start: 0, end: 5 },
      { start: 5, end: 6 },
      { start: 6, end: 7 },
      { start: 7, end: 11 },
      { start: 11, end: 12 },
      { start: 12, end: 13 },
    ]);
  });

  it("falls back to prefix decoding for tokenizers without byte access", () => {
    const opaque: Tokenizer = { kind: "x", vocabSize: 265, specialTokens: bytes.specialTokens, stopTokenIds: [], encode: (t) => bytes.encode(t), decode: (ids) => bytes.decode(ids) };
    expect(tokenSpans(opaque, bytes.encode("ab<think>"))).toEqual([
      { start: 0, end: 1 },
      { start: 1, end: 2 },
      { start: 2, end: 9 },
    ]);
  });
});

describe("action / args masks from parsed spans", () => {
  it("selects exactly the tokens of each tool name and of each arguments object in a sampled turn", () => {
    const codec = defaultCodec();
    const r = rng(33);
    for (let i = 0; i < 200; i++) {
      const calls = Array.from({ length: 1 + Math.floor(r() * 3) }, (_, k) => ({ name: ["bash", "réad_😀", "x"][k % 3] as string, arguments: randomArgs(r) }));
      const turn = renderAssistantTurn(codec, [{ role: "user", content: "go" }], [], { content: randomText(r).trim(), toolCalls: calls });
      const text = codec.tokenizer.decode(turn.tokens);
      const parsed = parseAssistantOutput(text);
      const spans = tokenSpans(codec.tokenizer, turn.tokens);
      const nameMask = tokenMask(spans, parsed.spans.toolCalls.map((s) => s.name));
      const argsMask = tokenMask(spans, parsed.spans.toolCalls.flatMap((s) => (s.arguments ? [s.arguments] : [])));
      const pick = (mask: boolean[]): string => codec.tokenizer.decode(turn.tokens.filter((_, k) => mask[k]));
      expect(pick(nameMask)).toBe(calls.map((c) => c.name).join(""));
      expect(pick(argsMask)).toBe(parsed.toolCalls.map((c) => c.argumentsText).join(""));
      expect(nameMask.some((m, k) => m && argsMask[k])).toBe(false);
    }
  });
});
