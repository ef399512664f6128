import type { Tokenizer } from "./types.js";
import { decodeUtf8, pushUtf8, utf8Bytes } from "./utf8.js";

/** The tiny models' special tokens, in id order from 256 (docs/model-dir.md). Never reorder: ids are baked into weights. */
export const BYTE_SPECIAL_TOKENS = [
  "<|endoftext|>",
  "<|im_start|>",
  "<|im_end|>",
  "<tool_call>",
  "</tool_call>",
  "<tool_response>",
  "</tool_response>",
  "<think>",
  "</think>",
] as const;

export const BYTE_VOCAB_SIZE = 256 + BYTE_SPECIAL_TOKENS.length;

/**
 * Byte-level tokenizer of the tiny presets: ids 0–255 are UTF-8 bytes, special-token strings in the text become their
 * ids. Encoding is one pass over the UTF-16 code units (it is on the proxy's hot path).
 */
export class ByteTokenizer implements Tokenizer {
  readonly kind = "bytes";
  readonly vocabSize: number;
  readonly specialTokens: ReadonlyMap<string, number>;
  readonly stopTokenIds: readonly number[];
  private readonly bytesById: Uint8Array[];
  /** Special tokens grouped by first UTF-16 code unit, longest first, for the scan. */
  private readonly byFirstChar: Map<number, { text: string; id: number }[]>;

  constructor(specials: readonly string[] = BYTE_SPECIAL_TOKENS) {
    const map = new Map<string, number>();
    specials.forEach((s, i) => {
      if (s.length === 0 || map.has(s)) throw new Error(`invalid special token list: ${JSON.stringify(s)}`);
      map.set(s, 256 + i);
    });
    this.specialTokens = map;
    this.vocabSize = 256 + specials.length;
    this.stopTokenIds = ["<|im_end|>", "<|endoftext|>"].flatMap((s) => (map.has(s) ? [map.get(s) as number] : []));
    this.bytesById = [];
    for (let b = 0; b < 256; b++) this.bytesById.push(Uint8Array.of(b));
    for (const s of specials) this.bytesById.push(utf8Bytes(s));
    this.byFirstChar = new Map();
    for (const [text, id] of map) {
      const c = text.charCodeAt(0);
      const list = this.byFirstChar.get(c) ?? [];
      list.push({ text, id });
      list.sort((a, b) => b.text.length - a.text.length);
      this.byFirstChar.set(c, list);
    }
  }

  encode(text: string): number[] {
    const out: number[] = [];
    let segStart = 0;
    const n = text.length;
    for (let i = 0; i < n; i++) {
      const candidates = this.byFirstChar.get(text.charCodeAt(i));
      if (candidates === undefined) continue;
      for (const cand of candidates) {
        if (text.startsWith(cand.text, i)) {
          pushUtf8(text, segStart, i, out);
          out.push(cand.id);
          i += cand.text.length - 1;
          segStart = i + 1;
          break;
        }
      }
    }
    pushUtf8(text, segStart, n, out);
    return out;
  }

  decode(ids: readonly number[]): string {
    let total = 0;
    for (const id of ids) total += this.tokenBytes(id).length;
    const buf = new Uint8Array(total);
    let o = 0;
    for (const id of ids) {
      const b = this.tokenBytes(id);
      buf.set(b, o);
      o += b.length;
    }
    return decodeUtf8(buf);
  }

  tokenBytes(id: number): Uint8Array {
    const b = this.bytesById[id];
    if (b === undefined) throw new RangeError(`token id ${id} is outside the byte tokenizer's vocabulary (${this.vocabSize})`);
    return b;
  }
}
