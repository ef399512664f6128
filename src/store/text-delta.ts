/**
 * JSON texts of a call stored as a delta against the call it extends. A harness's next request repeats the whole
 * conversation so far: its raw body and its normalised messages share a long prefix with the previous call's (the
 * earlier turns) and usually a suffix (the tool list and parameters after the messages). Storing them whole made
 * every record O(conversation) bytes, i.e. O(turns²) per session and most of an insert's pages for long real-harness
 * prompts (80k-character tool lists and histories). A delta keeps `keep` leading and `tail` trailing characters of
 * the base's text and stores only what lies between.
 */
export interface TextDelta {
  keep: number;
  tail: number;
  middle: string;
}

/** Below this many shared characters a delta is not worth a base lookup on read. */
const MIN_SHARED = 64;
/** Block size for prefix/suffix scans: native substring equality is ~20x faster than a per-character loop. */
const BLOCK = 1024;

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function commonPrefix(a: string, b: string, max: number): number {
  let i = 0;
  while (i + BLOCK <= max && a.substring(i, i + BLOCK) === b.substring(i, i + BLOCK)) i += BLOCK;
  while (i < max && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  // Never split a surrogate pair: the middle is stored as UTF-8 text, where half a pair cannot be written.
  if (i > 0 && isHighSurrogate(a.charCodeAt(i - 1))) i--;
  return i;
}

function commonSuffix(a: string, b: string, max: number): number {
  let j = 0;
  while (j + BLOCK <= max && a.substring(a.length - j - BLOCK, a.length - j) === b.substring(b.length - j - BLOCK, b.length - j)) j += BLOCK;
  while (j < max && a.charCodeAt(a.length - 1 - j) === b.charCodeAt(b.length - 1 - j)) j++;
  if (j > 0 && isLowSurrogate(a.charCodeAt(a.length - j))) j--;
  return j;
}

/** `text` as a delta of `base`, or null when they share too little to be worth it. */
export function textDelta(base: string, text: string): TextDelta | null {
  const keep = commonPrefix(base, text, Math.min(base.length, text.length));
  // The suffix may not reuse characters the prefix already took, from either string.
  const tail = commonSuffix(base, text, Math.min(base.length, text.length) - keep);
  if (keep + tail < MIN_SHARED) return null;
  return { keep, tail, middle: text.slice(keep, text.length - tail) };
}

export function applyTextDelta(base: string, keep: number, tail: number, middle: string): string {
  return base.slice(0, keep) + middle + base.slice(base.length - tail);
}
