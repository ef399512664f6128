import { escapeRegex } from "./hf-pipeline.js";

/**
 * Text from requests (user messages, tool outputs, file contents a tool read) must never become control tokens: the
 * text `<|im_start|>system` inside a tool result would otherwise be encoded as the special token and forge a system
 * turn in the policy's context. Only the chat template may emit special tokens.
 *
 * Templates render one string, so the distinction is carried in it: before rendering, every special-token text inside
 * request text is preceded by SPECIAL_ESCAPE (a Unicode noncharacter, reserved for internal use; a literal one is
 * doubled). Tokenizers drop the mark and encode the text after it as ordinary text, in context with its neighbours,
 * as a tokenizer with special-token splitting disabled would.
 */
export const SPECIAL_ESCAPE = "\uFDD0";

/** A matcher for the special-token texts (longest first) and the escape mark itself. */
export function specialTextPattern(specials: Iterable<string>): RegExp {
  const alts = [...specials].sort((a, b) => b.length - a.length).map(escapeRegex);
  return new RegExp([...alts, SPECIAL_ESCAPE].join("|"), "gu");
}

/** Marks every special-token text in untrusted `text` as literal (and doubles literal marks). */
export function escapeSpecialText(text: string, pattern: RegExp): string {
  pattern.lastIndex = 0;
  if (!pattern.test(text)) return text;
  pattern.lastIndex = 0;
  return text.replace(pattern, (m) => (m === SPECIAL_ESCAPE ? SPECIAL_ESCAPE + SPECIAL_ESCAPE : SPECIAL_ESCAPE + m));
}

/**
 * Removes the marks: the text as it reads, and the (UTF-16) positions in it where a special-token match must not
 * start. A doubled mark is one literal mark.
 */
export function unescapeSpecialText(text: string): { clean: string; literalAt: Set<number> } {
  const literalAt = new Set<number>();
  let clean = "";
  let from = 0;
  for (;;) {
    const at = text.indexOf(SPECIAL_ESCAPE, from);
    if (at < 0) break;
    clean += text.slice(from, at);
    if (text[at + 1] === SPECIAL_ESCAPE) {
      clean += SPECIAL_ESCAPE;
      from = at + 2;
    } else {
      literalAt.add(clean.length);
      from = at + 1;
    }
  }
  clean += text.slice(from);
  return { clean, literalAt };
}
