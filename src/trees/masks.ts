import { parseAssistantOutput } from "../chat/parse-output.js";
import type { Span } from "../chat/parse-output.js";
import { tokenSpans } from "../chat/token-spans.js";
import type { CallRecord } from "../icr/records.js";
import type { Tokenizer } from "../tokenizer/types.js";

/** Action / args flags over one call's completion tokens, plus what the parser found. */
export interface CompletionMasks {
  /** 1 on tokens of a tool call's name, its control tags and the JSON around the name (everything in the block but the arguments value). */
  action: Uint8Array;
  /** 1 on tokens of a tool call's arguments value. */
  args: Uint8Array;
  /** Per tool call (parser order): its action and args token indices, for process rewards per decision. */
  toolCalls: { name: string; action: number[]; args: number[] }[];
  malformed: number;
}

function overlaps(t: Span, s: Span): boolean {
  // An empty token span (a token that decodes to nothing) covers nothing.
  return t.start < s.end && s.start < t.end;
}

/**
 * Computes the masks of a sampled completion through character → token offsets: the completion is decoded once, the
 * Hermes parser gives each tool call's block / arguments character spans, and `tokenSpans` gives each token's character
 * range. A token that shares a character with the arguments value is args (a multi-byte character split over byte
 * tokens marks every one of its bytes); any other token sharing a character with the block is action.
 */
export function completionMasks(tokenizer: Tokenizer, ids: readonly number[]): CompletionMasks {
  const n = ids.length;
  const action = new Uint8Array(n);
  const args = new Uint8Array(n);
  const text = tokenizer.decode(ids);
  const parsed = parseAssistantOutput(text);
  const spans = tokenSpans(tokenizer, ids);
  const toolCalls: CompletionMasks["toolCalls"] = [];
  parsed.spans.toolCalls.forEach((tc, k) => {
    const a: number[] = [];
    const g: number[] = [];
    // Token spans are monotone: binary search would do, but completions are short and this stays obviously right.
    for (let i = 0; i < n; i++) {
      const t = spans[i] as Span;
      if (!overlaps(t, tc.block)) continue;
      if (tc.arguments !== null && overlaps(t, tc.arguments)) g.push(i);
      else a.push(i);
    }
    for (const i of a) if (args[i] === 0) action[i] = 1;
    for (const i of g) {
      args[i] = 1;
      action[i] = 0;
    }
    toolCalls.push({ name: parsed.toolCalls[k]?.name ?? "", action: a, args: g });
  });
  return { action, args, toolCalls, malformed: parsed.malformed.length };
}

/**
 * A validity test for the dead-leaf filter that also parses the completion: a call is valid when it succeeded, stopped
 * on its own and wrote no malformed tool call.
 */
export function parsedValidity(tokenizer: Tokenizer): (record: CallRecord) => boolean {
  return (record) => {
    if (record.status !== "ok" || record.finishReason !== "stop") return false;
    return parseAssistantOutput(tokenizer.decode(record.completionTokens)).malformed.length === 0;
  };
}
