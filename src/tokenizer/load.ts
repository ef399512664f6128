import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { UserError, errorMessage } from "../core/errors.js";
import { BYTE_SPECIAL_TOKENS, ByteTokenizer } from "./bytes.js";
import { HfBpeTokenizer, tokenizerJsonSchema } from "./hf-bpe.js";
import type { Tokenizer } from "./types.js";

/** A token in tokenizer_config.json is either its text or an AddedToken object. */
const tokenText = z.union([z.string(), z.object({ content: z.string() })]).transform((t) => (typeof t === "string" ? t : t.content));

export const tokenizerConfigSchema = z
  .object({
    chat_template: z.union([z.string(), z.array(z.object({ name: z.string(), template: z.string() }))]).optional(),
    bos_token: tokenText.nullable().optional(),
    eos_token: tokenText.nullable().optional(),
    harnessrl_tokenizer: z.string().optional(),
  })
  .loose();

export type TokenizerConfig = z.infer<typeof tokenizerConfigSchema>;

const bytesMarkerSchema = z.object({ harnessrl: z.object({ type: z.literal("bytes"), special_tokens: z.array(z.string()).optional() }) });

export function readJsonFile<T>(path: string, schema: z.ZodType<T>, what: string): T {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new UserError("invalid_model_dir", `cannot read ${what} ${path}: ${errorMessage(e)}`, { cause: e });
  }
  const r = schema.safeParse(raw);
  if (!r.success) throw new UserError("invalid_model_dir", `${what} ${path} is not valid: ${z.prettifyError(r.error)}`);
  return r.data;
}

export function readTokenizerConfig(modelDir: string): TokenizerConfig {
  const path = join(modelDir, "tokenizer_config.json");
  if (!existsSync(path)) return {};
  return readJsonFile(path, tokenizerConfigSchema, "tokenizer config");
}

/** EOS ids from generation_config.json (a number or a list), if present. */
function generationEosIds(modelDir: string): number[] {
  const path = join(modelDir, "generation_config.json");
  if (!existsSync(path)) return [];
  const cfg = readJsonFile(path, z.object({ eos_token_id: z.union([z.number().int(), z.array(z.number().int())]).optional() }).loose(), "generation config");
  const e = cfg.eos_token_id;
  return e === undefined ? [] : Array.isArray(e) ? e : [e];
}

/**
 * The tokenizer of a model directory (docs/model-dir.md): the tiny byte tokenizer when tokenizer_config.json says
 * `"harnessrl_tokenizer": "bytes"` or tokenizer.json carries the harnessrl marker, otherwise the Hugging Face
 * byte-level BPE in tokenizer.json. Stop tokens: `<|im_end|>`, `<|endoftext|>`, the configured eos token and
 * generation_config.json's eos ids, where they exist.
 */
export function loadTokenizer(modelDir: string): Tokenizer {
  const config = readTokenizerConfig(modelDir);
  const tokPath = join(modelDir, "tokenizer.json");
  const hasTokJson = existsSync(tokPath);
  if (config.harnessrl_tokenizer === "bytes" && !hasTokJson) return new ByteTokenizer();
  if (!hasTokJson) throw new UserError("invalid_model_dir", `${modelDir} has no tokenizer.json`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(tokPath, "utf8"));
  } catch (e) {
    throw new UserError("invalid_model_dir", `cannot read ${tokPath}: ${errorMessage(e)}`, { cause: e });
  }
  const marker = bytesMarkerSchema.safeParse(raw);
  if (marker.success || config.harnessrl_tokenizer === "bytes") {
    const specials = marker.success ? marker.data.harnessrl.special_tokens : undefined;
    if (specials && specials.join("\n") !== BYTE_SPECIAL_TOKENS.join("\n")) {
      // A different list would silently shift ids the weights were trained with.
      throw new UserError("invalid_tokenizer", `${tokPath}: special_tokens differ from the byte tokenizer's fixed list (${BYTE_SPECIAL_TOKENS.join(" ")})`);
    }
    return new ByteTokenizer();
  }
  const parsed = tokenizerJsonSchema.safeParse(raw);
  if (!parsed.success) throw new UserError("invalid_tokenizer", `${tokPath} is not a supported byte-level BPE tokenizer: ${z.prettifyError(parsed.error)}`);
  const stops = ["<|im_end|>", "<|endoftext|>"];
  if (config.eos_token) stops.push(config.eos_token);
  return new HfBpeTokenizer(parsed.data, { stopTokens: stops, extraStopIds: generationEosIds(modelDir) });
}
