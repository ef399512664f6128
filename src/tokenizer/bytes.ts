import type { Tokenizer } from "./types.js";
import { SPECIAL_ESCAPE, unescapeSpecialText } from "./special-escape.js";
import { decodeUtf8, utf8Bytes } from "./utf8.js";
import { UserError } from "../core/errors.js";

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
  /** Special-token texts by id − 256 (encodeMarked needs the text of a matched id per literal occurrence). */
  private readonly specialTexts: readonly string[];
  /** Special tokens' UTF-8 bytes, longest first, and which bytes can start one. */
  private readonly specialBytes: { bytes: Uint8Array; id: number }[];
  private readonly firstByte = new Uint8Array(256);
  /** The one byte every special token starts with, or -1. */
  private readonly singleLeadByte: number;

  constructor(specials: readonly string[] = BYTE_SPECIAL_TOKENS) {
    const map = new Map<string, number>();
    specials.forEach((s, i) => {
      if (s.length === 0 || map.has(s)) throw new UserError("invalid_tokenizer", `invalid special token list: ${JSON.stringify(s)}`);
      map.set(s, 256 + i);
    });
    this.specialTokens = map;
    this.specialTexts = [...specials];
    this.vocabSize = 256 + specials.length;
    this.stopTokenIds = ["<|im_end|>", "<|endoftext|>"].flatMap((s) => (map.has(s) ? [map.get(s) as number] : []));
    this.bytesById = [];
    for (let b = 0; b < 256; b++) this.bytesById.push(Uint8Array.of(b));
    for (const s of specials) this.bytesById.push(utf8Bytes(s));
    this.specialBytes = [...map.values()].map((id) => ({ bytes: this.bytesById[id] as Uint8Array, id })).sort((a, b) => b.bytes.length - a.bytes.length);
    for (const { bytes } of this.specialBytes) this.firstByte[bytes[0] as number] = 1;
    const leads = new Set(this.specialBytes.map((s) => s.bytes[0] as number));
    this.singleLeadByte = leads.size === 1 ? ([...leads][0] as number) : -1;
  }

  encode(text: string): number[] {
    return text.includes(SPECIAL_ESCAPE) ? this.encodeMarked(text) : this.encodeUnmarked(text);
  }

  private encodeUnmarked(text: string): number[] {
    // Matching special tokens on the UTF-8 bytes is equivalent to matching on the text (UTF-8 is self-synchronising),
    // and lets the native encoder and `indexOf` do the heavy lifting.
    const bytes = Buffer.from(text, "utf8");
    const n = bytes.length;
    const out: number[] = [];
    const lead = this.singleLeadByte;
    if (lead < 0) {
      for (let i = 0; i < n; i++) {
        const b = bytes[i] as number;
        const id = this.firstByte[b] === 1 ? this.matchSpecial(bytes, i) : -1;
        if (id >= 0) i += (this.bytesById[id] as Uint8Array).length - 1;
        out.push(id >= 0 ? id : b);
      }
      return out;
    }
    // All special tokens start with the same byte (`<`): copy runs up to each occurrence of it.
    let from = 0;
    while (from < n) {
      const at = bytes.indexOf(lead, from);
      const end = at < 0 ? n : at;
      for (let i = from; i < end; i++) out.push(bytes[i] as number);
      if (at < 0) break;
      const id = this.matchSpecial(bytes, at);
      if (id >= 0) {
        out.push(id);
        from = at + (this.bytesById[id] as Uint8Array).length;
      } else {
        out.push(lead);
        from = at + 1;
      }
    }
    return out;
  }

  decode(ids: readonly number[]): string {
    let total = 0;
    for (const id of ids) total += id < 256 && id >= 0 ? 1 : this.tokenBytes(id).length;
    const buf = new Uint8Array(total);
    let o = 0;
    for (const id of ids) {
      if (id < 256 && id >= 0) buf[o++] = id;
      else {
        const b = this.tokenBytes(id);
        buf.set(b, o);
        o += b.length;
      }
    }
    return decodeUtf8(buf);
  }

  /** Text with special-token texts marked as request text (special-escape.ts): those stay bytes. */
  private encodeMarked(text: string): number[] {
    const { clean, literalAt } = unescapeSpecialText(text);
    const out: number[] = [];
    let from = 0;
    for (const at of [...literalAt].sort((a, b) => a - b)) {
      if (at < from) continue;
      const before = this.encodeUnmarked(clean.slice(from, at));
      for (const id of before) out.push(id);
      // The longest special text starting here, if any, goes out as its bytes.
      const rest = Buffer.from(clean.slice(at, at + 64), "utf8");
      const id = this.matchSpecial(rest, 0);
      if (id < 0) {
        from = at;
        continue;
      }
      for (const b of this.bytesById[id] as Uint8Array) out.push(b);
      from = at + (this.specialTexts[id - 256] as string).length;
    }
    for (const id of this.encodeUnmarked(clean.slice(from))) out.push(id);
    return out;
  }

  private matchSpecial(bytes: Uint8Array, at: number): number {
    for (const cand of this.specialBytes) {
      const sb = cand.bytes;
      if (at + sb.length > bytes.length || sb[0] !== bytes[at]) continue;
      let k = 1;
      while (k < sb.length && sb[k] === bytes[at + k]) k++;
      if (k === sb.length) return cand.id;
    }
    return -1;
  }

  hasText(id: number): boolean {
    return Number.isInteger(id) && id >= 0 && id < this.vocabSize;
  }

  tokenBytes(id: number): Uint8Array {
    const b = this.bytesById[id];
    if (b === undefined) throw new UserError("invalid_token", `token id ${id} is outside the byte tokenizer's vocabulary (${this.vocabSize})`);
    return b;
  }
}
