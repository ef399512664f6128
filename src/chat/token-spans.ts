import type { Tokenizer } from "../tokenizer/types.js";
import { decodeUtf8WithOffsets } from "../tokenizer/utf8.js";
import type { Span } from "./parse-output.js";

/**
 * For each token, the [start, end) UTF-16 range of `tokenizer.decode(ids)` it produced. A character whose UTF-8 bytes
 * are split over several tokens belongs to all of them (their spans overlap on it); invalid bytes map to the U+FFFD
 * they decode to. Tokens that decode to nothing get an empty span where they sit.
 */
export function tokenSpans(tokenizer: Tokenizer, ids: readonly number[]): Span[] {
  const tb = tokenizer.tokenBytes?.bind(tokenizer);
  if (!tb) return prefixDecodeSpans(tokenizer, ids);
  const pieces = ids.map((id) => tb(id));
  const total = pieces.reduce((n, p) => n + p.length, 0);
  const bytes = new Uint8Array(total);
  const firstByte: number[] = [];
  let o = 0;
  for (const p of pieces) {
    firstByte.push(o);
    bytes.set(p, o);
    o += p.length;
  }
  const { text, charStart, charEnd } = decodeUtf8WithOffsets(bytes);
  return pieces.map((p, i) => {
    const b0 = firstByte[i] as number;
    if (p.length === 0) {
      const at = b0 < total ? (charStart[b0] as number) : text.length;
      return { start: at, end: at };
    }
    return { start: charStart[b0] as number, end: charEnd[b0 + p.length - 1] as number };
  });
}

/** Tokenizers without byte access: spans from the growth of prefix decodings (quadratic, approximate at splits). */
function prefixDecodeSpans(tokenizer: Tokenizer, ids: readonly number[]): Span[] {
  const out: Span[] = [];
  let prev = 0;
  for (let i = 0; i < ids.length; i++) {
    const len = tokenizer.decode(ids.slice(0, i + 1)).length;
    out.push({ start: Math.min(prev, len), end: len });
    prev = len;
  }
  return out;
}

/** `mask[i]` is true when token i's span overlaps any of `spans` (e.g. the tool-name spans → an action mask). */
export function tokenMask(tokens: readonly Span[], spans: readonly Span[]): boolean[] {
  return tokens.map((t) => spans.some((s) => t.start < s.end && s.start < t.end));
}
