/**
 * Finds where the members of a top-level JSON object sit in its text. `JSON.parse` validates and gives values; this
 * scanner only gives positions, so it assumes the text already parsed successfully.
 */
export interface MemberPosition {
  key: string;
  /** [start, end) of the value's text, UTF-16 offsets into the scanned string. */
  valueStart: number;
  valueEnd: number;
}

const WS = new Set([" ", "\t", "\n", "\r"]);

function skipWs(s: string, i: number): number {
  while (i < s.length && WS.has(s[i] as string)) i++;
  return i;
}

/** Index just after the string literal starting at `i` (which is a `"`). */
function skipString(s: string, i: number): number {
  i++;
  while (i < s.length) {
    const c = s[i];
    if (c === "\\") i += 2;
    else if (c === '"') return i + 1;
    else i++;
  }
  return i;
}

function skipValue(s: string, i: number): number {
  const c = s[i];
  if (c === '"') return skipString(s, i);
  if (c === "{" || c === "[") {
    let depth = 0;
    while (i < s.length) {
      const d = s[i];
      if (d === '"') {
        i = skipString(s, i);
        continue;
      }
      if (d === "{" || d === "[") depth++;
      else if (d === "}" || d === "]") {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return i;
  }
  // Literal or number: runs until a delimiter.
  while (i < s.length && !WS.has(s[i] as string) && s[i] !== "," && s[i] !== "}" && s[i] !== "]") i++;
  return i;
}

/** Members of the object whose text is `s` (valid JSON, an object), in order of appearance. */
export function scanObjectMembers(s: string): MemberPosition[] {
  const out: MemberPosition[] = [];
  let i = skipWs(s, 0);
  if (s[i] !== "{") return out;
  i = skipWs(s, i + 1);
  while (i < s.length && s[i] !== "}") {
    const keyEnd = skipString(s, i);
    const key = JSON.parse(s.slice(i, keyEnd)) as string;
    i = skipWs(s, keyEnd);
    i = skipWs(s, i + 1); // past ':'
    const valueStart = i;
    const valueEnd = skipValue(s, i);
    out.push({ key, valueStart, valueEnd });
    i = skipWs(s, valueEnd);
    if (s[i] === ",") i = skipWs(s, i + 1);
  }
  return out;
}
