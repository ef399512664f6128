import { describe, expect, it } from "vitest";
import { ByteTokenizer } from "../../src/tokenizer/bytes.js";
import { HfBpeTokenizer, tokenizerJsonSchema } from "../../src/tokenizer/hf-bpe.js";
import { loadTokenizer } from "../../src/tokenizer/load.js";
import { qwen3TokenizerFiles } from "../../src/tokenizer/qwen3-data.js";
import { textlessIds } from "../../src/tokenizer/textless.js";

// The ids engines must never sample (and the worker leaves out of its softmax: worker/tests/test_vocab.py checks the
// same cases on the Python side's reading of tokenizer.json).
describe("textlessIds", () => {
  it("Qwen3: the 267 padded rows of its 151,936-row embedding, no holes below 151,669", () => {
    const tok = loadTokenizer(qwen3TokenizerFiles().dir);
    expect(tok.vocabSize).toBe(151_669);
    const ids = textlessIds(tok, 151_936);
    expect(ids).toHaveLength(267);
    expect([ids[0], ids.at(-1)]).toEqual([151_669, 151_935]);
    expect(textlessIds(tok, 151_669)).toEqual([]);
  });

  it("a tokenizer.json with a hole in its id range, and the byte tokenizer", () => {
    const bytes = Array.from({ length: 256 }, (_, b) => String.fromCodePoint(b < 33 ? 256 + b : b));
    const vocab = Object.fromEntries(bytes.map((c, i) => [c, i]).filter(([, i]) => i !== 7));
    const json = tokenizerJsonSchema.parse({
      model: { type: "BPE", vocab, merges: [] },
      pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, use_regex: false },
      added_tokens: [{ id: 257, content: "<|im_end|>", special: true }],
    });
    const hf = new HfBpeTokenizer(json);
    expect(hf.vocabSize).toBe(258);
    expect(textlessIds(hf, 260)).toEqual([7, 256, 258, 259]);
    expect(() => hf.decode([256])).toThrow(/not in this tokenizer's vocabulary/);
    expect(textlessIds(new ByteTokenizer(), 270)).toEqual([265, 266, 267, 268, 269]);
  });
});
