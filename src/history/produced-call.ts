import { hasPrefix } from "../core/strings.js";
import type { ChatRenderer } from "../chat/renderer.js";
import type { ChatMessage, ToolSpec } from "../chat/types.js";
import type { HistoryBreak } from "../icr/records.js";
import type { Tokenizer } from "../tokenizer/types.js";
import { digest } from "./message-key.js";
import type { TrieNode } from "./trie.js";

/** How a produced call's sampled turn sits in the rendered conversation, for one renderer. */
export type SpliceInfo =
  | {
      ok: true;
      /** |A| where A = render(messages ++ [response], no generation prompt). */
      aLength: number;
      /** Digest of A: a later request's rendering must start with A (checked by digest to keep memory linear). */
      aDigest: string;
      /** A itself while the call is among the session's latest (the usual parents): a plain prefix check. */
      aText: string | null;
      /** Text between the sampled tokens and the rest of the next prompt (e.g. "\n", or "<|im_end|>\n" when truncated). */
      tail: string;
    }
  | { ok: false; reason: string };

/**
 * What the planner keeps of a call it produced. Prompt tokens are stored as a persistent chain: a spliced call keeps
 * only the tokens after its parent's prompt + completion, so a session's memory is linear in its token count.
 */
export interface ProducedCall {
  callId: string;
  /** Order of `remember` within the planner: larger is later. */
  order: number;
  parentCallId: string | null;
  reusedPrefixTokens: number;
  break: HistoryBreak | null;
  tools: string;
  requestIdsDigest: string;
  historyIdsDigest: string;
  requestNode: TrieNode;
  historyNode: TrieNode;
  /** The produced call whose prompt + completion this call's prompt starts with (null: `ownPrompt` is the whole prompt). */
  base: ProducedCall | null;
  /** Plain arrays, not typed ones: assembling a prompt is then a block copy (see promptTokensOf). */
  ownPrompt: readonly number[];
  completion: readonly number[];
  promptLength: number;
  splice: Map<ChatRenderer, SpliceInfo>;
  /** The call's real messages (with its ids) until its splice info is computed for the first time. */
  pending: { messages: ChatMessage[]; response: ChatMessage; tools: ToolSpec[] } | null;
}

/**
 * The call's full prompt token ids followed by `extra` (e.g. its completion and the next prompt's new tokens),
 * assembled from the chain in one allocation: pushing onto the result afterwards would copy a 100k-token array again.
 */
export function promptTokensOf(call: ProducedCall, ...extra: (readonly number[])[]): number[] {
  const segments: (readonly number[])[] = [call.ownPrompt];
  for (let c: ProducedCall | null = call.base; c; c = c.base) segments.push(c.completion, c.ownPrompt);
  segments.reverse();
  segments.push(...extra);
  // concat of packed small-integer arrays is a block copy in V8: several times faster than element-wise copies.
  return ([] as number[]).concat(...segments);
}

/**
 * G = render(messages, generation prompt), A = render(messages ++ [response]). A must extend G; the assistant region
 * T = A[|G|:] ends with the end-of-turn text. If the sampled tokens already end with it, what follows them in the next
 * prompt is T after the end-of-turn; if sampling was cut short (max tokens, or another stop token) the end-of-turn
 * itself becomes context.
 */
export function computeSplice(
  messages: readonly ChatMessage[],
  response: ChatMessage,
  tools: readonly ToolSpec[],
  completion: readonly number[],
  codec: { tokenizer: Tokenizer; renderer: ChatRenderer },
  renderedRequest?: string,
): SpliceInfo {
  const { renderer, tokenizer } = codec;
  const g = renderedRequest ?? renderer.render(messages, tools, { addGenerationPrompt: true });
  const a = renderer.render([...messages, response], tools, { addGenerationPrompt: false });
  if (!hasPrefix(a, g)) {
    return { ok: false, reason: "the template does not render the assistant turn as a continuation of its generation prompt" };
  }
  const eot = renderer.endOfTurn;
  const t = a.slice(g.length);
  const e = t.lastIndexOf(eot);
  if (e < 0) return { ok: false, reason: `the template does not close the assistant turn with ${JSON.stringify(eot)}` };
  const last = completion[completion.length - 1];
  const sampledEndOfTurn = last !== undefined && tokenizer.decode([last]) === eot;
  return { ok: true, aLength: a.length, aDigest: digest(a), aText: a, tail: sampledEndOfTurn ? t.slice(e + eot.length) : t.slice(e) };
}
