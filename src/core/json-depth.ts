/**
 * How deeply a JSON text nests arrays and objects, found by one iterative scan (strings skipped, escapes honoured).
 * Untrusted JSON is checked with it before anything recursive (templates' `tojson`, canonical value keys, schema
 * walkers) touches the parsed value: 5,000 levels overflow the stack of every one of them.
 *
 * Returns as soon as `limit` is exceeded (the depth reached then), so hostile input costs at most one pass.
 */
export function jsonNestingDepth(text: string, limit = Infinity): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > limit) return max;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/**
 * Nesting limit for JSON from harnesses: request bodies (messages → content blocks → tool inputs → schemas) and tool-call
 * argument texts. Real tool schemas nest a dozen levels; 5,000 overflow recursive consumers.
 */
export const MAX_JSON_DEPTH = 128;
