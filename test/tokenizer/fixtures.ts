import { byteToUnicodeTable } from "../../src/tokenizer/hf-pipeline.js";

/** The Qwen2/Qwen3 pre-tokenizer pattern as it appears in their tokenizer.json files. */
export const QWEN_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/**
 * A hand-made byte-level BPE tokenizer.json: ids 0–255 are the byte characters (id = byte value), then these merges,
 * then added tokens. Expected encodings in the tests are worked out by hand from this table.
 */
export const MERGES: [string, string][] = [
  ["h", "e"], // 256 he
  ["l", "l"], // 257 ll
  ["he", "ll"], // 258 hell
  ["hell", "o"], // 259 hello
  ["Ġ", "w"], // 260 Ġw
  ["o", "r"], // 261 or
  ["Ġw", "or"], // 262 Ġwor
  ["Ã", "©"], // 263 Ã© (é)
  ["Ġ", "Ġ"], // 264 ĠĠ
  ["Ċ", "Ċ"], // 265 ĊĊ
  ["S", "a"], // 266 Sa
  ["1", "2"], // 267 12
];

export const ADDED = [
  { id: 268, content: "<|endoftext|>", special: true },
  { id: 269, content: "<|im_start|>", special: true },
  { id: 270, content: "<|im_end|>", special: true },
  { id: 271, content: "<tool_call>", special: false },
];

export function tokenizerJson(options: { mergeForm?: "string" | "pair"; preTokenizer?: unknown; ignoreMerges?: boolean; extraVocab?: Record<string, number> } = {}): Record<string, unknown> {
  const table = byteToUnicodeTable();
  const vocab: Record<string, number> = {};
  table.forEach((ch, b) => (vocab[ch] = b));
  MERGES.forEach(([a, b], i) => (vocab[a + b] = 256 + i));
  Object.assign(vocab, options.extraVocab ?? {});
  return {
    version: "1.0",
    added_tokens: ADDED.map((t) => ({ ...t, single_word: false, lstrip: false, rstrip: false, normalized: false })),
    normalizer: { type: "NFC" },
    pre_tokenizer: options.preTokenizer ?? {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: QWEN_PATTERN }, behavior: "Isolated", invert: false },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: "",
      end_of_word_suffix: "",
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: options.ignoreMerges ?? false,
      vocab,
      merges: options.mergeForm === "pair" ? MERGES : MERGES.map(([a, b]) => `${a} ${b}`),
    },
  };
}
