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
  let total = 0;
  for (const p of pieces) total += p.length;
  const bytes = new Uint8Array(total);
  const firstByte = new Uint32Array(pieces.length);
  let o = 0;
  for (let i = 0; i < pieces.length; i++) {
    const p = pieces[i] as Uint8Array;
    firstByte[i] = o;
    // Most tokens are a few bytes: a plain loop beats TypedArray.set's call overhead.
    for (let k = 0; k < p.length; k++) bytes[o++] = p[k] as number;
  }
  const { text, charStart, charEnd } = decodeUtf8WithOffsets(bytes);
  const out: Span[] = new Array<Span>(pieces.length);
  for (let i = 0; i < pieces.length; i++) {
    const b0 = firstByte[i] as number;
    const len = (pieces[i] as Uint8Array).length;
    if (len === 0) {
      const at = b0 < total ? (charStart[b0] as number) : text.length;
      out[i] = { start: at, end: at };
    } else out[i] = { start: charStart[b0] as number, end: charEnd[b0 + len - 1] as number };
  }
  return out;
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
