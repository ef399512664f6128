import type { ChatMessage } from "../chat/types.js";
import type { BreakKind, HistoryBreak } from "../icr/records.js";
import { sameJson } from "./message-key.js";

/** A produced call the request is compared against, with its history `messages ++ [response]` and their keys. */
export interface Related {
  callId: string;
  history: readonly ChatMessage[];
  keys: readonly string[];
}

/**
 * Classifies how a request's messages `m` (content keys `keys`) depart from a produced history. `d` is the length of
 * their common prefix: m[0..d) equals history[0..d), and m[d] (if any) is the first differing message.
 */
export function classifyDivergence(m: readonly ChatMessage[], keys: readonly string[], d: number, rel: Related): HistoryBreak {
  const h = rel.history;
  const make = (kind: BreakKind, detail: string): HistoryBreak => ({ kind, detail, fromCallId: rel.callId });
  if (d >= m.length) {
    return make("dropped_turns", `the request is the first ${m.length} messages of call ${rel.callId}'s ${h.length}-message history: later turns were dropped`);
  }
  const mine = m[d] as ChatMessage;
  const theirs = h[d];
  if (theirs === undefined) {
    return make("edited_history", `the request extends call ${rel.callId}'s history but differs in something rendered before it (tools or template inputs)`);
  }
  const at = `message ${d} (${mine.role})`;
  const later = keys[d] === undefined ? -1 : laterIndex(rel.keys, keys[d] as string, d + 1);
  if (later >= 0) {
    return make("dropped_turns", `${at} is message ${later} of call ${rel.callId}'s history: messages ${d}..${later - 1} were dropped`);
  }
  // A sampled turn that came back without its reasoning (or with its arguments re-serialised) after messages the
  // harness removed (OpenClaw in chat mode drops the context message it appends after every tool result).
  const laterTurn = mine.role === "assistant" ? laterSampledTurn(mine, h, d + 1) : null;
  if (laterTurn) {
    return make("dropped_turns", `${at} is message ${laterTurn.index} of call ${rel.callId}'s history (${laterTurn.how}): messages ${d}..${laterTurn.index - 1} were dropped`);
  }
  if (mine.role === "assistant" && theirs.role === "assistant") {
    const assistant = compareAssistant(mine, theirs);
    if (assistant) return make(assistant.kind, `${at}: ${assistant.detail}`);
  }
  if (mine.role === "assistant") {
    return make("unknown_assistant_turn", `${at} is an assistant turn this proxy did not produce at this point (call ${rel.callId} has a ${theirs.role} message there)`);
  }
  if (m.length < h.length - 1) {
    return make("compaction", `${at} is not in call ${rel.callId}'s history and the request shrank from ${h.length - 1} to ${m.length} messages`);
  }
  return make("edited_history", `${at} differs from call ${rel.callId}'s ${theirs.role} message`);
}

function compareAssistant(mine: ChatMessage, theirs: ChatMessage): { kind: BreakKind; detail: string } | null {
  const a = mine.toolCalls ?? [];
  const b = theirs.toolCalls ?? [];
  const namesEqual = a.length === b.length && a.every((c, i) => c.name === b[i]?.name);
  if (!namesEqual) {
    return { kind: "unknown_assistant_turn", detail: "an assistant turn this proxy did not produce (its tool calls differ from the sampled turn's)" };
  }
  const contentEqual = mine.content === theirs.content;
  const argsTextEqual = a.every((c, i) => c.arguments === b[i]?.arguments);
  const argsJsonEqual = argsTextEqual || a.every((c, i) => sameJson(c.arguments, b[i]?.arguments ?? ""));
  const mineReasoning = mine.reasoning ?? "";
  const theirReasoning = theirs.reasoning ?? "";
  if (contentEqual && argsJsonEqual) {
    if (mineReasoning !== theirReasoning) {
      if (mineReasoning === "" && theirReasoning !== "") {
        return { kind: "stripped_reasoning", detail: `the sampled turn's reasoning was removed${argsTextEqual ? "" : " (and its tool arguments re-serialised)"}` };
      }
      return { kind: "edited_history", detail: "the sampled turn's reasoning was changed" };
    }
    if (!argsTextEqual) {
      const i = a.findIndex((c, j) => c.arguments !== b[j]?.arguments);
      return { kind: "reserialized_tool_args", detail: `tool call ${i} (${a[i]?.name ?? "?"}) came back with the same JSON value written differently` };
    }
    return null;
  }
  return { kind: "edited_history", detail: contentEqual ? "the sampled turn's tool arguments were changed" : "the sampled turn's text was changed" };
}

function laterIndex(keys: readonly string[], key: string, from: number): number {
  for (let j = from; j < keys.length; j++) if (keys[j] === key) return j;
  return -1;
}

/** The first assistant message of `h` from `from` on that is `mine` up to its reasoning or its arguments' form. */
function laterSampledTurn(mine: ChatMessage, h: readonly ChatMessage[], from: number): { index: number; how: string } | null {
  for (let j = from; j < h.length; j++) {
    const theirs = h[j] as ChatMessage;
    if (theirs.role !== "assistant") continue;
    const diff = compareAssistant(mine, theirs);
    if (diff === null) return { index: j, how: "as sampled" };
    if (diff.kind === "stripped_reasoning" || diff.kind === "reserialized_tool_args") return { index: j, how: diff.detail };
  }
  return null;
}
