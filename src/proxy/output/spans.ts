import type { ParsedAssistantOutput, Span } from "../../chat/parse-output.js";
import { parseAssistantOutput } from "../../chat/parse-output.js";
import { tokenSpans } from "../../chat/token-spans.js";
import type { CompletionSpans, TokenRange } from "../../icr/records.js";
import type { Tokenizer } from "../../tokenizer/types.js";

function overlaps(t: Span, s: Span): boolean {
  // An empty token span (a token that decodes to nothing) covers nothing.
  return t.start < s.end && s.start < t.end;
}

/** Ascending token indices as [start, end) runs. */
function runs(indices: readonly number[]): TokenRange[] {
  const out: TokenRange[] = [];
  for (const i of indices) {
    const last = out[out.length - 1];
    if (last && last[1] === i) last[1] = i + 1;
    else out.push([i, i + 1]);
  }
  return out;
}

/**
 * Locates the parsed tool calls of a completion in its tokens, with the codec that sampled them. `output` is the parse
 * of `tokenizer.decode(tokens)`; `tokenSpans` gives each token's character range of that text. A token that shares a
 * character with a call's arguments value is args (a multi-byte character split over byte tokens marks every one of its
 * bytes); any other token sharing a character with the call's block is action.
 */
export function completionSpans(tokenizer: Tokenizer, tokens: readonly number[], output: ParsedAssistantOutput): CompletionSpans {
  const malformed = output.malformed.length;
  if (output.spans.toolCalls.length === 0) return { toolCalls: [], malformed };
  const spans = tokenSpans(tokenizer, tokens);
  const toolCalls = output.spans.toolCalls.map((tc, k) => {
    const action: number[] = [];
    const args: number[] = [];
    // Token spans are monotone: binary search would do, but completions are short and this stays obviously right.
    spans.forEach((t, i) => {
      if (!overlaps(t, tc.block)) return;
      if (tc.arguments !== null && overlaps(t, tc.arguments)) args.push(i);
      else action.push(i);
    });
    return { name: output.toolCalls[k]?.name ?? "", action: runs(action), args: runs(args) };
  });
  return { toolCalls, malformed };
}

/**
 * The one parse of a sampled completion: the assistant turn for the reply, and its spans for the record. `endOfTurn`:
 * the chat template's end-of-turn text (stripped from the end like `<|endoftext|>`).
 */
export function parseCompletion(tokenizer: Tokenizer, endOfTurn: string, tokens: readonly number[]): { output: ParsedAssistantOutput; spans: CompletionSpans } {
  const output = parseAssistantOutput(tokenizer.decode(tokens), { endOfTurnTexts: [endOfTurn, "<|endoftext|>"] });
  return { output, spans: completionSpans(tokenizer, tokens, output) };
}
