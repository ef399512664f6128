import { UserError } from "../core/errors.js";
/**
 * Converts the Oniguruma/fancy-regex patterns found in Hugging Face `tokenizer.json` pre-tokenizers into JavaScript
 * regular expressions (`u` flag). Node 20 lacks inline modifiers and possessive quantifiers, so:
 * - `(?i:…)` groups become non-capturing groups with ASCII letters expanded to both cases;
 * - possessive quantifiers (`?+`, `*+`, `++`, `}+`) become greedy ones. For the patterns real tokenizers use
 *   (GPT-2, Qwen2/3, Llama-3, cl100k-style) this does not change what they match, because the token that follows a
 *   possessive piece can never match what backtracking would give back.
 */
export function convertHfRegex(pattern: string): string {
  let out = "";
  let inClass = false;
  // Stack of open groups: true when the group (or an enclosing one) is case-insensitive.
  const groups: boolean[] = [];
  const caseless = (): boolean => groups.length > 0 && groups[groups.length - 1] === true;
  let i = 0;
  let lastWasQuantifiable = false;
  while (i < pattern.length) {
    const c = pattern[i] as string;
    if (c === "\\") {
      const next = pattern[i + 1] ?? "";
      let esc = c + next;
      i += 2;
      // Escapes with a braced argument (\p{L}, \u{…}, \x{…}) are copied whole.
      if ((next === "p" || next === "P" || next === "u" || next === "x") && pattern[i] === "{") {
        const close = pattern.indexOf("}", i);
        if (close < 0) throw new UserError("invalid_tokenizer", `unterminated escape in regex: ${pattern}`);
        // JavaScript spells `\x{41}` as `\u{41}`.
        esc = (next === "x" ? "\\u" : esc) + pattern.slice(i, close + 1);
        i = close + 1;
      }
      out += esc;
      lastWasQuantifiable = true;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      if (caseless() && /[A-Za-z]/.test(c)) throw new UserError("unsupported_tokenizer", `case-insensitive character classes are not supported: ${pattern}`);
      out += c;
      if (c === "]") lastWasQuantifiable = true;
      i++;
      continue;
    }
    if (c === "[") {
      inClass = true;
      out += c;
      i++;
      // A leading `]` or `^]` is literal inside a class.
      if (pattern[i] === "^") out += pattern[i++];
      if (pattern[i] === "]") out += "\\" + pattern[i++];
      continue;
    }
    if (c === "(") {
      if (pattern.startsWith("(?i:", i)) {
        groups.push(true);
        out += "(?:";
        i += 4;
      } else if (pattern.startsWith("(?-i:", i)) {
        groups.push(false);
        out += "(?:";
        i += 5;
      } else {
        groups.push(caseless());
        out += c;
        i++;
      }
      lastWasQuantifiable = false;
      continue;
    }
    if (c === ")") {
      groups.pop();
      out += c;
      i++;
      lastWasQuantifiable = true;
      continue;
    }
    if (c === "?" || c === "*" || c === "+" || c === "}") {
      out += c;
      i++;
      if (c === "}" || lastWasQuantifiable) {
        // Drop a possessive marker; keep a lazy one.
        if (pattern[i] === "+") i++;
      }
      lastWasQuantifiable = false;
      continue;
    }
    out += caseless() && /[A-Za-z]/.test(c) ? `[${bothCases(c)}]` : c;
    lastWasQuantifiable = true;
    i++;
  }
  return out;
}

function bothCases(c: string): string {
  const lower = c.toLowerCase();
  const upper = c.toUpperCase();
  return lower === upper ? c : lower + upper;
}
