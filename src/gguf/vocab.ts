import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { UserError } from "../core/errors.js";
import { gguf, type GgufValue } from "./writer.js";

/**
 * The GGUF tokenizer section. harnessrl always feeds llama.cpp token ids and never uses its tokenizer, but llama.cpp
 * must still load a consistent vocabulary of exactly `vocab_size` entries, and must not mistake our special tokens.
 * Both tokenizers are written as a GPT-2 byte-level BPE vocabulary with the `qwen2` pre-tokenizer.
 */

/** llama.cpp token types. */
enum TokenType {
  NORMAL = 1,
  UNKNOWN = 2,
  CONTROL = 3,
  USER_DEFINED = 4,
  UNUSED = 5,
  BYTE = 6,
}

/** GPT-2's reversible byte → printable-unicode map, which byte-level BPE vocabularies are written in. */
export function gpt2ByteChars(): string[] {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const out: string[] = new Array<string>(256);
  let n = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCodePoint(printable.includes(b) ? b : 256 + n++);
  return out;
}

export interface GgufVocab {
  tokens: string[];
  types: number[];
  merges: string[];
  eosId: number;
  bosId: number;
}

/** Chat control tokens that real Qwen tokenizers mark `special`; the rest of the tiny tokenizer's specials are plain added tokens. */
const CONTROL = new Set(["<|endoftext|>", "<|im_start|>", "<|im_end|>"]);

const tinySchema = z.object({ harnessrl: z.object({ type: z.literal("bytes"), special_tokens: z.array(z.string()) }) });
const hfSchema = z.object({
  model: z.object({
    type: z.string().optional(),
    vocab: z.record(z.string(), z.number().int().nonnegative()),
    merges: z.array(z.union([z.string(), z.tuple([z.string(), z.string()])])).default([]),
  }),
  added_tokens: z.array(z.object({ id: z.number().int().nonnegative(), content: z.string(), special: z.boolean().default(false) })).default([]),
});

function padTo(vocab: GgufVocab, vocabSize: number): GgufVocab {
  if (vocab.tokens.length > vocabSize) throw new UserError("invalid_tokenizer", `tokenizer has ${vocab.tokens.length} tokens but config.json vocab_size is ${vocabSize}`);
  for (let i = vocab.tokens.length; i < vocabSize; i++) {
    vocab.tokens.push(`[PAD${i}]`);
    vocab.types.push(TokenType.UNUSED);
  }
  return vocab;
}

export function readVocab(modelDir: string, vocabSize: number): GgufVocab {
  const path = join(modelDir, "tokenizer.json");
  if (!existsSync(path)) throw new UserError("invalid_model_dir", `${modelDir}: tokenizer.json is missing`);
  const raw: unknown = JSON.parse(readFileSync(path, "utf8"));
  const tiny = tinySchema.safeParse(raw);
  if (tiny.success) {
    const chars = gpt2ByteChars();
    const specials = tiny.data.harnessrl.special_tokens;
    const tokens = [...chars, ...specials];
    const types = [...chars.map(() => TokenType.NORMAL), ...specials.map((s) => (CONTROL.has(s) ? TokenType.CONTROL : TokenType.USER_DEFINED))];
    const id = (s: string): number => tokens.indexOf(s);
    const eos = id("<|im_end|>") >= 0 ? id("<|im_end|>") : id("<|endoftext|>");
    return padTo({ tokens, types, merges: [], eosId: eos, bosId: id("<|endoftext|>") >= 0 ? id("<|endoftext|>") : eos }, vocabSize);
  }
  const hf = hfSchema.safeParse(raw);
  if (!hf.success) throw new UserError("invalid_tokenizer", `${path}: neither a harnessrl byte tokenizer nor a Hugging Face BPE tokenizer: ${hf.error.message}`);
  const byId = new Map<number, { text: string; type: number }>();
  for (const [text, tid] of Object.entries(hf.data.model.vocab)) byId.set(tid, { text, type: TokenType.NORMAL });
  for (const a of hf.data.added_tokens) byId.set(a.id, { text: a.content, type: a.special ? TokenType.CONTROL : TokenType.USER_DEFINED });
  // Not Math.max(...keys): a real vocabulary (150k+ entries) overflows the call stack as spread arguments.
  let maxId = -1;
  for (const tid of byId.keys()) if (tid > maxId) maxId = tid;
  if (maxId >= vocabSize) throw new UserError("invalid_tokenizer", `${path}: token id ${maxId} does not fit config.json vocab_size ${vocabSize}`);
  const tokens: string[] = [];
  const types: number[] = [];
  for (let i = 0; i < vocabSize; i++) {
    const t = byId.get(i);
    tokens.push(t ? t.text : `[PAD${i}]`);
    types.push(t ? t.type : TokenType.UNUSED);
  }
  const merges = hf.data.model.merges.map((m) => (typeof m === "string" ? m : `${m[0]} ${m[1]}`));
  const find = (s: string): number => tokens.indexOf(s);
  const eos = find("<|im_end|>") >= 0 ? find("<|im_end|>") : find("<|endoftext|>");
  if (eos < 0) throw new UserError("invalid_tokenizer", `${path}: no <|im_end|> or <|endoftext|> token`);
  const bos = find("<|endoftext|>") >= 0 ? find("<|endoftext|>") : eos;
  return { tokens, types, merges, eosId: eos, bosId: bos };
}

/** The `tokenizer.ggml.*` metadata for a vocabulary. */
export function vocabMetadata(v: GgufVocab): [string, GgufValue][] {
  return [
    ["tokenizer.ggml.model", gguf.str("gpt2")],
    ["tokenizer.ggml.pre", gguf.str("qwen2")],
    ["tokenizer.ggml.tokens", gguf.strings(v.tokens)],
    ["tokenizer.ggml.token_type", gguf.i32s(v.types)],
    ["tokenizer.ggml.merges", gguf.strings(v.merges)],
    ["tokenizer.ggml.eos_token_id", gguf.u32(v.eosId)],
    ["tokenizer.ggml.bos_token_id", gguf.u32(v.bosId)],
    ["tokenizer.ggml.padding_token_id", gguf.u32(v.bosId)],
    ["tokenizer.ggml.add_bos_token", gguf.bool(false)],
  ];
}
