import { InfraError } from "../core/errors.js";
/**
 * UTF-8 helpers shared by the tokenizers. Decoding follows the WHATWG decoder (the one `TextDecoder` implements): each
 * maximal invalid subpart becomes one U+FFFD. `decodeUtf8WithOffsets` additionally reports, for every input byte, the
 * UTF-16 range of the character it belongs to; tests check it against `TextDecoder` on random bytes.
 */

const decoder = new TextDecoder("utf-8");

/** Appends the UTF-8 bytes of `text[start, end)` to `out`; lone surrogates become U+FFFD like `TextEncoder`. */
export function pushUtf8(text: string, start: number, end: number, out: number[]): void {
  for (let i = start; i < end; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      out.push(c);
      continue;
    }
    if (c < 0x800) {
      out.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < end ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        out.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
        i++;
        continue;
      }
      c = 0xfffd;
    }
    out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
  }
}

export function utf8Bytes(text: string): Uint8Array {
  const out: number[] = [];
  pushUtf8(text, 0, text.length, out);
  return Uint8Array.from(out);
}

export function decodeUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

export interface DecodedWithOffsets {
  text: string;
  /** For byte i: UTF-16 offset where the character containing it starts. */
  charStart: Uint32Array;
  /** For byte i: UTF-16 offset just after the character containing it. */
  charEnd: Uint32Array;
}

/**
 * WHATWG UTF-8 decoding that remembers which character each byte ended up in. The text itself comes from
 * `TextDecoder` (same algorithm); this pass only tracks how many UTF-16 units each decoded character takes.
 */
export function decodeUtf8WithOffsets(bytes: Uint8Array): DecodedWithOffsets {
  const n = bytes.length;
  const charStart = new Uint32Array(n);
  const charEnd = new Uint32Array(n);
  let len = 0;
  // A decoded character (code point `cp`) made of bytes [from, to).
  const emit = (cp: number, from: number, to: number): void => {
    const units = cp >= 0x10000 ? 2 : 1;
    for (let k = from; k < to; k++) {
      charStart[k] = len;
      charEnd[k] = len + units;
    }
    len += units;
  };
  let needed = 0;
  let seen = 0;
  let cp = 0;
  let lower = 0x80;
  let upper = 0xbf;
  let seqStart = 0;
  let i = 0;
  while (i < n) {
    const b = bytes[i] as number;
    if (needed === 0) {
      seqStart = i;
      if (b <= 0x7f) {
        charStart[i] = len;
        charEnd[i] = ++len;
      } else if (b >= 0xc2 && b <= 0xdf) {
        needed = 1;
        cp = b & 0x1f;
      } else if (b >= 0xe0 && b <= 0xef) {
        if (b === 0xe0) lower = 0xa0;
        if (b === 0xed) upper = 0x9f;
        needed = 2;
        cp = b & 0xf;
      } else if (b >= 0xf0 && b <= 0xf4) {
        if (b === 0xf0) lower = 0x90;
        if (b === 0xf4) upper = 0x8f;
        needed = 3;
        cp = b & 0x7;
      } else emit(0xfffd, i, i + 1);
      i++;
      continue;
    }
    if (b < lower || b > upper) {
      // The partial sequence is one replacement character; this byte starts over.
      emit(0xfffd, seqStart, i);
      needed = seen = cp = 0;
      lower = 0x80;
      upper = 0xbf;
      continue;
    }
    lower = 0x80;
    upper = 0xbf;
    cp = (cp << 6) | (b & 0x3f);
    seen++;
    i++;
    if (seen === needed) {
      emit(cp, seqStart, i);
      needed = seen = cp = 0;
    }
  }
  if (needed !== 0) emit(0xfffd, seqStart, n);
  const text = decoder.decode(bytes);
  if (text.length !== len) throw new InfraError("internal", `UTF-8 offset tracking disagrees with TextDecoder (${len} vs ${text.length})`);
  return { text, charStart, charEnd };
}
