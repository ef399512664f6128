import { describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { mulberry32 as rng } from "../../src/core/random.js";
import { BYTE_SPECIAL_TOKENS, BYTE_VOCAB_SIZE, ByteTokenizer } from "../../src/tokenizer/bytes.js";
import { StreamDecoder } from "../../src/tokenizer/stream-decoder.js";
import { decodeUtf8WithOffsets } from "../../src/tokenizer/utf8.js";

const PIECES = ["a", "Z", " ", "\n", "<", "|", ">", "é", "€", "😀", "中", "<|im_end|>", "<|im_start|>", "<tool_call>", "</tool_call>", "<think>", "<|im_", "</", "\ud800"];

function randomText(r: () => number, n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) s += PIECES[Math.floor(r() * PIECES.length)];
  return s;
}

describe("ByteTokenizer (docs/model-dir.md ids)", () => {
  const tok = new ByteTokenizer();

  it("assigns the special tokens ids 256–264 in the documented order, vocab 265, stops im_end and endoftext", () => {
    expect(BYTE_VOCAB_SIZE).toBe(265);
    expect(tok.vocabSize).toBe(265);
    expect([...tok.specialTokens.entries()]).toEqual(BYTE_SPECIAL_TOKENS.map((s, i) => [s, 256 + i]));
    expect(tok.specialTokens.get("<|endoftext|>")).toBe(256);
    expect(tok.specialTokens.get("</think>")).toBe(264);
    expect([...tok.stopTokenIds].sort()).toEqual([256, 258]);
  });

  it("encodes plain text as its UTF-8 bytes and special-token strings as their ids", () => {
    const text = "héllo wörld 😀 中文";
    expect(tok.encode(text)).toEqual([...Buffer.from(text, "utf8")]);
    expect(tok.encode("<|im_start|>user\nhi<|im_end|>")).toEqual([257, ...Buffer.from("user\nhi"), 258]);
    expect(tok.encode("<tool_call></tool_call><tool_response></tool_response><think></think><|endoftext|>")).toEqual([259, 260, 261, 262, 263, 264, 256]);
  });

  it("leaves near-miss special strings as bytes", () => {
    for (const s of ["<|im_start", "<tool_call", "< think>", "<|im_end|", "<<|im_end|"]) expect(tok.encode(s)).toEqual([...Buffer.from(s)]);
    expect(tok.encode("<<|im_end|>")).toEqual([60, 258]);
  });

  it("also handles special-token lists that do not all start with the same byte", () => {
    const custom = new ByteTokenizer(["<a>", "[b]", "<ab>"]);
    expect(custom.encode("x<ab>[b]<a>[c]")).toEqual([120, 258, 257, 256, ...Buffer.from("[c]")]);
    expect(custom.decode(custom.encode("é[b]<a"))).toBe("é[b]<a");
  });

  it("encodes lone surrogates as U+FFFD like TextEncoder", () => {
    for (const s of ["a\ud800b", "\udc00", "x\ud83d", "\ud83d\ude00"]) expect(tok.encode(s)).toEqual([...new TextEncoder().encode(s)]);
  });

  it("round-trips random text with specials, multi-byte characters and emoji", () => {
    const r = rng(7);
    for (let i = 0; i < 300; i++) {
      const text = randomText(r, 1 + Math.floor(r() * 40));
      const expected = text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
      expect(tok.decode(tok.encode(text))).toBe(expected);
    }
  });

  it("decodes invalid byte sequences to U+FFFD exactly like TextDecoder", () => {
    const ids = [0xe2, 0x82, 258, 0xff, 0x41, 0xf0, 0x9f, 0x98];
    const bytes = Buffer.concat(ids.map((id) => Buffer.from(tok.tokenBytes(id))));
    expect(tok.decode(ids)).toBe(new TextDecoder().decode(bytes));
    expect(tok.decode(ids)).toBe("\ufffd<|im_end|>\ufffdA\ufffd");
  });

  it("rejects ids outside the vocabulary", () => {
    expect(() => tok.decode([265])).toThrow(UserError);
    expect(() => tok.tokenBytes(-1)).toThrow(UserError);
  });
});

describe("StreamDecoder", () => {
  const tok = new ByteTokenizer();

  it("holds incomplete UTF-8 sequences until the character is complete", () => {
    const d = new StreamDecoder(tok);
    const ids = tok.encode("a😀é");
    const pieces = ids.map((id) => d.push(id));
    expect(pieces).toEqual(["a", "", "", "", "😀", "", "é"]);
    expect(d.flush()).toBe("");
  });

  it("concatenates to decode(ids) for random streams, including invalid bytes, in random chunk sizes", () => {
    const r = rng(11);
    for (let i = 0; i < 200; i++) {
      const ids = tok.encode(randomText(r, 20));
      // Sprinkle raw bytes that form invalid or truncated sequences.
      for (let k = 0; k < 3; k++) ids.splice(Math.floor(r() * ids.length), 0, [0x80, 0xc3, 0xe2, 0xf0, 0xff][Math.floor(r() * 5)] as number);
      const d = new StreamDecoder(tok);
      let out = "";
      let at = 0;
      while (at < ids.length) {
        const n = 1 + Math.floor(r() * 4);
        out += d.push(ids.slice(at, at + n));
        at += n;
      }
      out += d.flush();
      expect(out).toBe(tok.decode(ids));
    }
  });

  it("falls back to re-decoding for tokenizers without byte access", () => {
    const opaque = { kind: "opaque", vocabSize: 265, specialTokens: tok.specialTokens, stopTokenIds: tok.stopTokenIds, encode: (t: string) => tok.encode(t), decode: (ids: readonly number[]) => tok.decode(ids) };
    const d = new StreamDecoder(opaque);
    const ids = tok.encode("x€y");
    const pieces = ids.map((id) => d.push(id));
    expect(pieces.join("") + d.flush()).toBe("x€y");
    expect(pieces[1]).toBe("");
  });
});

describe("decodeUtf8WithOffsets", () => {
  it("produces TextDecoder's text and maps every byte into the character that contains it", () => {
    const r = rng(3);
    const interesting = [0x00, 0x41, 0x7f, 0x80, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xa0, 0xed, 0x9f, 0xef, 0xf0, 0x90, 0xf4, 0x8f, 0xf5, 0xff];
    for (let i = 0; i < 2000; i++) {
      const n = Math.floor(r() * 12);
      const bytes = new Uint8Array(n);
      for (let k = 0; k < n; k++) bytes[k] = r() < 0.7 ? (interesting[Math.floor(r() * interesting.length)] as number) : Math.floor(r() * 256);
      const { text, charStart, charEnd } = decodeUtf8WithOffsets(bytes);
      expect(text).toBe(new TextDecoder().decode(bytes));
      // Each character's bytes re-decode to exactly that character (when valid) and ranges tile the text.
      let expectStart = 0;
      for (let k = 0; k < n; k++) {
        const s = charStart[k] as number;
        const e = charEnd[k] as number;
        expect(s === expectStart || s === (charStart[k - 1] as number)).toBe(true);
        expect(e).toBeGreaterThan(s);
        expectStart = e;
      }
      expect(n === 0 ? 0 : charEnd[n - 1]).toBe(text.length);
    }
  });

  it("splits a valid multi-byte character's bytes onto one character", () => {
    const { text, charStart, charEnd } = decodeUtf8WithOffsets(new TextEncoder().encode("a😀b"));
    expect(text).toBe("a😀b");
    expect([...charStart]).toEqual([0, 1, 1, 1, 1, 3]);
    expect([...charEnd]).toEqual([1, 3, 3, 3, 3, 4]);
  });
});
