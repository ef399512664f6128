import { z } from "zod";
import { SPECIAL_ESCAPE, unescapeSpecialText } from "./special-escape.js";
import { UserError } from "../core/errors.js";
import type { Normalize, PreTokenizer } from "./hf-pipeline.js";
import { buildNormalizer, buildPreTokenizer, byteToUnicodeTable, escapeRegex, pipelineSchemas } from "./hf-pipeline.js";
import type { Tokenizer } from "./types.js";
import { decodeUtf8, utf8Bytes } from "./utf8.js";

/** The parts of a Hugging Face `tokenizer.json` that byte-level BPE needs; the rest of the file is ignored. */
export const tokenizerJsonSchema = z.object({
  added_tokens: z.array(z.object({ id: z.number().int().nonnegative(), content: z.string().min(1), special: z.boolean().optional() })).default([]),
  normalizer: pipelineSchemas.normalizer.nullable().optional(),
  pre_tokenizer: pipelineSchemas.preTokenizer.nullable().optional(),
  model: z.object({
    type: z.literal("BPE"),
    // Real vocabularies and merge lists have ~150k entries: zod checks the containers, the constructor the entries
    // (a per-entry schema costs seconds).
    vocab: z.custom<Record<string, unknown>>((v) => typeof v === "object" && v !== null && !Array.isArray(v), "vocab must be an object of token → id"),
    merges: z.custom<unknown[]>((v) => Array.isArray(v), "merges must be an array"),
    unk_token: z.string().nullable().optional(),
    ignore_merges: z.boolean().optional(),
    byte_fallback: z.boolean().optional(),
    continuing_subword_prefix: z.string().nullable().optional(),
    end_of_word_suffix: z.string().nullable().optional(),
  }),
});

export type TokenizerJson = z.infer<typeof tokenizerJsonSchema>;

const CACHE_LIMIT = 100_000;
const SEP = "\u0000";

/**
 * Byte-level BPE from a Hugging Face `tokenizer.json` (Qwen2/Qwen3 and friends): added tokens are split out first,
 * then normalizer, pre-tokenizer regex splits, GPT-2 byte → unicode mapping, and BPE merges by rank with a cache.
 */
export class HfBpeTokenizer implements Tokenizer {
  readonly kind = "hf-bpe";
  readonly vocabSize: number;
  readonly specialTokens: ReadonlyMap<string, number>;
  readonly stopTokenIds: readonly number[];
  private readonly vocab: Map<string, number>;
  private readonly idToToken: (string | undefined)[];
  private readonly ranks: Map<string, number>;
  private readonly ignoreMerges: boolean;
  private readonly unkId: number | undefined;
  private readonly normalize: Normalize;
  private readonly preTokenizer: PreTokenizer;
  private readonly addedSplitter: RegExp | null;
  private readonly byteChars = byteToUnicodeTable();
  private readonly charToByte = new Map<string, number>();
  private readonly bytesCache: (Uint8Array | undefined)[];
  private readonly addedById: (string | undefined)[];
  private readonly cache = new Map<string, number[]>();

  constructor(json: TokenizerJson, options: { stopTokens?: readonly string[]; extraStopIds?: readonly number[] } = {}) {
    const m = json.model;
    if (m.byte_fallback === true || m.continuing_subword_prefix || m.end_of_word_suffix) {
      throw new UserError("unsupported_tokenizer", "tokenizer.json: only byte-level BPE without byte_fallback or subword affixes is supported");
    }
    this.normalize = buildNormalizer(json.normalizer);
    this.preTokenizer = buildPreTokenizer(json.pre_tokenizer);
    if (!this.preTokenizer.byteLevel) {
      throw new UserError("unsupported_tokenizer", "tokenizer.json: the pre-tokenizer has no ByteLevel step; only byte-level BPE is supported");
    }
    this.vocab = new Map();
    let maxId = -1;
    for (const tok in m.vocab) {
      const id = m.vocab[tok];
      if (typeof id !== "number" || !Number.isInteger(id) || id < 0) throw new UserError("invalid_tokenizer", `tokenizer.json: vocab entry ${JSON.stringify(tok)} has id ${JSON.stringify(id)}`);
      this.vocab.set(tok, id);
      if (id > maxId) maxId = id;
    }
    for (const t of json.added_tokens) if (t.id > maxId) maxId = t.id;
    this.vocabSize = maxId + 1;
    // Dense arrays (filled, not grown by random index) keep V8 on fast elements for the id → token lookups.
    this.idToToken = new Array<string | undefined>(this.vocabSize).fill(undefined);
    this.bytesCache = new Array<Uint8Array | undefined>(this.vocabSize).fill(undefined);
    this.addedById = new Array<string | undefined>(this.vocabSize).fill(undefined);
    for (const [tok, id] of this.vocab) this.idToToken[id] = tok;
    this.ranks = new Map();
    for (let rank = 0; rank < m.merges.length; rank++) {
      const merge = m.merges[rank];
      let key: string;
      if (typeof merge === "string") {
        const i = merge.indexOf(" ", 1);
        if (i < 0) throw new UserError("invalid_tokenizer", `tokenizer.json: merge ${JSON.stringify(merge)} is not "a b"`);
        key = merge.slice(0, i) + SEP + merge.slice(i + 1);
      } else if (Array.isArray(merge) && merge.length === 2 && typeof merge[0] === "string" && typeof merge[1] === "string") {
        key = merge[0] + SEP + merge[1];
      } else throw new UserError("invalid_tokenizer", `tokenizer.json: merge ${rank} is neither "a b" nor ["a", "b"]`);
      if (!this.ranks.has(key)) this.ranks.set(key, rank);
    }
    this.ignoreMerges = m.ignore_merges === true;
    this.unkId = m.unk_token ? this.vocab.get(m.unk_token) : undefined;
    const added = new Map<string, number>();
    for (const t of json.added_tokens) {
      added.set(t.content, t.id);
      this.addedById[t.id] = t.content;
    }
    this.specialTokens = added;
    this.addedSplitter =
      added.size === 0
        ? null
        : new RegExp(
            [...added.keys()]
              .sort((x, y) => y.length - x.length)
              .map(escapeRegex)
              .join("|"),
            "gu",
          );
    this.byteChars.forEach((ch, b) => this.charToByte.set(ch, b));
    const stops = options.stopTokens ?? ["<|im_end|>", "<|endoftext|>"];
    const stopIds = stops.flatMap((s) => {
      const id = added.get(s) ?? this.vocab.get(s);
      return id === undefined ? [] : [id];
    });
    for (const id of options.extraStopIds ?? []) if (id < this.vocabSize) stopIds.push(id);
    this.stopTokenIds = [...new Set(stopIds)];
  }

  hasText(id: number): boolean {
    return Number.isInteger(id) && id >= 0 && id < this.vocabSize && (this.idToToken[id] !== undefined || this.addedById[id] !== undefined);
  }

  encode(text: string): number[] {
    const out: number[] = [];
    // Special-token texts the renderer marked as request text stay ordinary text (special-escape.ts).
    let literalAt: Set<number> | null = null;
    if (text.includes(SPECIAL_ESCAPE)) ({ clean: text, literalAt } = unescapeSpecialText(text));
    if (!this.addedSplitter) {
      this.encodeOrdinary(text, out);
      return out;
    }
    let last = 0;
    this.addedSplitter.lastIndex = 0;
    for (const m of text.matchAll(this.addedSplitter)) {
      if (literalAt?.has(m.index)) continue;
      if (m.index > last) this.encodeOrdinary(text.slice(last, m.index), out);
      out.push(this.specialTokens.get(m[0]) as number);
      last = m.index + m[0].length;
    }
    if (last < text.length) this.encodeOrdinary(text.slice(last), out);
    return out;
  }

  decode(ids: readonly number[]): string {
    const parts: Uint8Array[] = ids.map((id) => this.tokenBytes(id));
    let total = 0;
    for (const p of parts) total += p.length;
    const buf = new Uint8Array(total);
    let o = 0;
    // Tokens are a few bytes each: a plain loop beats TypedArray.set's per-call overhead.
    for (const p of parts) for (let k = 0; k < p.length; k++) buf[o++] = p[k] as number;
    return decodeUtf8(buf);
  }

  tokenBytes(id: number): Uint8Array {
    const cached = this.bytesCache[id];
    if (cached) return cached;
    let bytes: Uint8Array | undefined;
    const tok = this.idToToken[id];
    if (tok !== undefined) {
      const arr: number[] = [];
      for (const ch of tok) {
        const b = this.charToByte.get(ch);
        if (b === undefined) {
          // Not a byte-level token (some vocabularies hold a few plain-text tokens): use its UTF-8 text.
          arr.push(...utf8Bytes(ch));
        } else arr.push(b);
      }
      bytes = Uint8Array.from(arr);
    } else {
      const added = this.addedById[id];
      if (added !== undefined) bytes = utf8Bytes(added);
    }
    if (!bytes) throw new UserError("invalid_token", `token id ${id} is not in this tokenizer's vocabulary`);
    this.bytesCache[id] = bytes;
    return bytes;
  }

  private encodeOrdinary(text: string, out: number[]): void {
    for (const piece of this.preTokenizer.split(this.normalize(text))) {
      let ids = this.cache.get(piece);
      if (!ids) {
        ids = this.bpe(piece);
        if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
        this.cache.set(piece, ids);
      }
      for (const id of ids) out.push(id);
    }
  }

  private bpe(piece: string): number[] {
    let mapped = "";
    for (const b of utf8Bytes(piece)) mapped += this.byteChars[b];
    if (this.ignoreMerges) {
      const whole = this.vocab.get(mapped);
      if (whole !== undefined) return [whole];
    }
    // Mapped characters are all single UTF-16 code units (U+0021…U+0143).
    const symbols = mapped.split("");
    while (symbols.length > 1) {
      let best = Infinity;
      let at = -1;
      for (let i = 0; i < symbols.length - 1; i++) {
        const r = this.ranks.get((symbols[i] as string) + SEP + (symbols[i + 1] as string));
        if (r !== undefined && r < best) {
          best = r;
          at = i;
        }
      }
      if (at < 0) break;
      symbols.splice(at, 2, (symbols[at] as string) + (symbols[at + 1] as string));
    }
    return symbols.map((s) => {
      const id = this.vocab.get(s) ?? this.unkId;
      if (id === undefined) throw new UserError("invalid_tokenizer", `tokenizer.json: BPE produced ${JSON.stringify(s)}, which is not in the vocabulary`);
      return id;
    });
  }
}
