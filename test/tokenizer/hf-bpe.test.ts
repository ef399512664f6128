import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { ByteTokenizer } from "../../src/tokenizer/bytes.js";
import { HfBpeTokenizer, tokenizerJsonSchema } from "../../src/tokenizer/hf-bpe.js";
import { buildPreTokenizer, byteToUnicodeTable } from "../../src/tokenizer/hf-pipeline.js";
import { convertHfRegex } from "../../src/tokenizer/hf-regex.js";
import { loadTokenizer } from "../../src/tokenizer/load.js";
import { StreamDecoder } from "../../src/tokenizer/stream-decoder.js";
import { QWEN_PATTERN, tokenizerJson } from "./fixtures.js";

const make = (o: Parameters<typeof tokenizerJson>[0] = {}): HfBpeTokenizer => new HfBpeTokenizer(tokenizerJsonSchema.parse(tokenizerJson(o)));

describe("GPT-2 byte ↔ unicode map", () => {
  it("is a bijection onto 256 single code units with the well-known images of space and newline", () => {
    const t = byteToUnicodeTable();
    expect(new Set(t).size).toBe(256);
    expect(t[0x20]).toBe("Ġ");
    expect(t[0x0a]).toBe("Ċ");
    expect(t[0x41]).toBe("A");
    expect(t[0xad]).toBe("Ń");
    for (const c of t) expect(c.length).toBe(1);
  });
});

describe("convertHfRegex", () => {
  it("expands (?i:…) into both cases and compiles with the u flag", () => {
    const src = convertHfRegex(QWEN_PATTERN);
    expect(src.startsWith("(?:'[sS]|'[tT]|'[rR][eE]|")).toBe(true);
    expect(() => new RegExp(src, "gu")).not.toThrow();
  });

  it("drops possessive quantifiers, keeps lazy ones, and rewrites \\x{…}", () => {
    expect(convertHfRegex("[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++a*+b{1,3}+c??")).toBe("[^\\r\\n\\p{L}\\p{N}]?\\p{L}+a*b{1,3}c??");
    expect(convertHfRegex("\\x{41}+")).toBe("\\u{41}+");
  });

  it("splits text the way Qwen's pre-tokenizer does", () => {
    const pre = buildPreTokenizer({ type: "Split", pattern: { Regex: QWEN_PATTERN }, behavior: "Isolated", invert: false });
    expect(pre.split("Hello world")).toEqual(["Hello", " world"]);
    expect(pre.split("I'M 'Sam's 1234!!\n\n  x")).toEqual(["I", "'M", " '", "Sam", "'s", " ", "1", "2", "3", "4", "!!\n\n", " ", " x"]);
    expect(pre.split("a  world")).toEqual(["a", " ", " world"]);
  });

  it("implements the Split behaviours Removed, MergedWithPrevious and MergedWithNext", () => {
    const split = (behavior: "Removed" | "MergedWithPrevious" | "MergedWithNext") => buildPreTokenizer({ type: "Split", pattern: { String: "-" }, behavior }).split("the-final--x");
    expect(split("Removed")).toEqual(["the", "final", "x"]);
    expect(split("MergedWithPrevious")).toEqual(["the-", "final-", "-", "x"]);
    expect(split("MergedWithNext")).toEqual(["the", "-final", "-", "-x"]);
  });
});

describe("HfBpeTokenizer (hand-made Qwen-style tokenizer.json)", () => {
  const tok = make();

  it("applies merges by rank within pre-tokens", () => {
    expect(tok.encode("hello world")).toEqual([259, 262, 108, 100]);
    expect(tok.encode("hello  world")).toEqual([259, 32, 262, 108, 100]);
    expect(tok.encode("\n\n")).toEqual([265]);
    expect(tok.encode("hehe")).toEqual([256, 256]);
  });

  it("respects pre-token boundaries: (?i:'s) splits 'Sam, digits are split one by one", () => {
    expect(tok.encode("'Sam")).toEqual([39, 83, 97, 109]);
    expect(tok.encode("Sam")).toEqual([266, 109]);
    expect(tok.encode("123")).toEqual([49, 50, 51]);
  });

  it("maps multi-byte characters through the byte map and NFC-normalises first", () => {
    expect(tok.encode("é")).toEqual([263]);
    expect(tok.encode("e\u0301")).toEqual([263]);
    expect(tok.encode("😀")).toEqual([...Buffer.from("😀")]);
  });

  it("splits out added tokens, special or not, before everything else", () => {
    expect(tok.encode("<|im_start|>hello<|im_end|>")).toEqual([269, 259, 270]);
    expect(tok.encode("<tool_call>x<|endoftext|>")).toEqual([271, 120, 268]);
    expect(tok.specialTokens.get("<tool_call>")).toBe(271);
    expect(tok.vocabSize).toBe(272);
    expect([...tok.stopTokenIds].sort()).toEqual([268, 270]);
  });

  it("decodes back to the text, and streams through StreamDecoder", () => {
    for (const text of ["hello world", "<|im_start|>hé 12 😀\n\n<|im_end|>", "'Sam's", ""]) {
      const ids = tok.encode(text);
      expect(tok.decode(ids)).toBe(text.normalize("NFC"));
      const d = new StreamDecoder(tok);
      expect(ids.map((id) => d.push(id)).join("") + d.flush()).toBe(text.normalize("NFC"));
    }
    expect(() => tok.decode([999])).toThrow(UserError);
  });

  it("gives the same result for merges written as 'a b' strings and as [a, b] pairs", () => {
    const pairs = make({ mergeForm: "pair" });
    for (const text of ["hello world", "Sam 12 é", "\n\n  x"]) expect(pairs.encode(text)).toEqual(tok.encode(text));
  });

  it("uses a whole-word vocabulary entry first when ignore_merges is set", () => {
    const t = make({ ignoreMerges: true, extraVocab: { "Ġworld": 300 } });
    expect(t.encode("hello world")).toEqual([259, 300]);
    expect(make({ extraVocab: { "Ġworld": 300 } }).encode("hello world")).toEqual([259, 262, 108, 100]);
  });

  it("supports the GPT-2 ByteLevel pre-tokenizer with its own regex and prefix space", () => {
    const gpt2 = make({ preTokenizer: { type: "ByteLevel", add_prefix_space: false, use_regex: true } });
    expect(gpt2.encode("hello world")).toEqual([259, 262, 108, 100]);
    const prefixed = make({ preTokenizer: { type: "ByteLevel", add_prefix_space: true, use_regex: true } });
    expect(prefixed.encode("world")).toEqual([262, 108, 100]);
  });

  it("rejects tokenizers it cannot reproduce", () => {
    const json = tokenizerJson();
    expect(() => new HfBpeTokenizer(tokenizerJsonSchema.parse({ ...json, pre_tokenizer: { type: "Split", pattern: { String: " " }, behavior: "Isolated" } }))).toThrow(/ByteLevel/);
    expect(tokenizerJsonSchema.safeParse({ ...json, model: { type: "WordPiece", vocab: {} } }).success).toBe(false);
    expect(tokenizerJsonSchema.safeParse({ ...json, pre_tokenizer: { type: "Metaspace" } }).success).toBe(false);
    const model = json.model as Record<string, unknown>;
    const withModel = (over: Record<string, unknown>) => () => new HfBpeTokenizer(tokenizerJsonSchema.parse({ ...json, model: { ...model, ...over } }));
    expect(withModel({ vocab: { a: -1 } })).toThrow(/vocab entry "a" has id -1/);
    expect(withModel({ merges: ["ab"] })).toThrow(/is not "a b"/);
    expect(withModel({ merges: [["a"]] })).toThrow(/merge 0 is neither/);
    expect(withModel({ byte_fallback: true })).toThrow(/byte_fallback/);
    expect(tokenizerJsonSchema.safeParse({ ...json, model: { ...model, vocab: [] } }).success).toBe(false);
  });
});

describe("loadTokenizer(modelDir)", () => {
  const root = mkdtempSync(join(tmpdir(), "hrl-tok-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  function dir(files: Record<string, unknown>): string {
    const d = mkdtempSync(join(root, "m-"));
    for (const [name, v] of Object.entries(files)) writeFileSync(join(d, name), typeof v === "string" ? v : JSON.stringify(v));
    return d;
  }

  it("loads the HF tokenizer with stop ids from the eos token and generation_config.json", () => {
    const t = loadTokenizer(dir({ "tokenizer.json": tokenizerJson(), "tokenizer_config.json": { eos_token: "<tool_call>" }, "generation_config.json": { eos_token_id: [268, 5000] } }));
    expect(t.kind).toBe("hf-bpe");
    expect([...t.stopTokenIds].sort()).toEqual([268, 270, 271]);
    expect(t.encode("hello")).toEqual([259]);
  });

  it("picks the byte tokenizer from the harnessrl markers", () => {
    expect(loadTokenizer(dir({ "tokenizer_config.json": { harnessrl_tokenizer: "bytes" } }))).toBeInstanceOf(ByteTokenizer);
    expect(loadTokenizer(dir({ "tokenizer.json": { harnessrl: { type: "bytes" } } }))).toBeInstanceOf(ByteTokenizer);
  });

  it("refuses a byte tokenizer whose special-token list differs from the fixed one", () => {
    expect(() => loadTokenizer(dir({ "tokenizer.json": { harnessrl: { type: "bytes", special_tokens: ["<|im_end|>"] } } }))).toThrow(/special_tokens differ/);
  });

  it("says what is wrong with a missing or unsupported tokenizer.json", () => {
    expect(() => loadTokenizer(dir({}))).toThrow(UserError);
    expect(() => loadTokenizer(dir({}))).toThrow(/no tokenizer.json/);
    expect(() => loadTokenizer(dir({ "tokenizer.json": "{oops" }))).toThrow(/cannot read/);
    expect(() => loadTokenizer(dir({ "tokenizer.json": { model: { type: "Unigram", vocab: [] } } }))).toThrow(/not a supported byte-level BPE tokenizer/);
  });
});
