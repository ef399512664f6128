import { hasPrefix } from "../core/strings.js";
import type { ChatRenderer } from "../chat/renderer.js";
import type { ChatMessage, Conversation, ToolSpec } from "../chat/types.js";
import type { CallRecord, HistoryBreak, RealignedTurn } from "../icr/records.js";
import type { Store } from "../store/types.js";
import type { Tokenizer } from "../tokenizer/types.js";
import { classifyDivergence } from "./classify.js";
import { contentKey, digest, hasAssistant, idsDigest, messageFromKey, toolsKey } from "./message-key.js";
import { computeSplice, promptTokensOf, type ProducedCall, type SpliceInfo } from "./produced-call.js";
import { TrieNode, walk } from "./trie.js";
import type { HistoryPlanner, PromptPlan } from "./types.js";

type Codec = { tokenizer: Tokenizer; renderer: ChatRenderer };

export interface HistoryPlannerOptions {
  /** Sessions kept in memory; the least recently used are dropped and reloaded from the store when they return. */
  maxSessions?: number;
  /** Codec used to precompute splice data in `remember` before any `plan` call has named one. */
  codec?: Codec;
}

interface SessionState {
  root: TrieNode;
  calls: Map<string, ProducedCall>;
  /** Interned tools texts: every call of a session usually sends the same (often ~30k-character) tool list. */
  tools: Map<string, string>;
  /** The last calls remembered, whose splice data still holds the rendered text. */
  recent: ProducedCall[];
}

/** Calls of a session whose rendered history text is kept for a plain `startsWith` check (the usual parents). */
const RECENT_TEXTS = 2;

/** What `plan` learnt about a request, reused by `remember` when the record carries the same messages array. */
interface Planned {
  length: number;
  tools: readonly ToolSpec[];
  /** The request's messages with realigned turns as they were sampled, and their keys: what the prompt renders. */
  messages: readonly ChatMessage[];
  keys: string[];
  rendered: string;
}

export function createHistoryPlanner(store: Store | null, options: HistoryPlannerOptions = {}): TokenExactPlanner {
  return new TokenExactPlanner(store, options);
}

/**
 * The token-exact history planner (docs/history.md). Per session it indexes the calls it produced in a trie over
 * message content; a request is planned with one walk of its messages, one render, and prefix checks against the
 * parent's cached rendering, so planning cost is linear in the request, not in the session's history of calls.
 */
export class TokenExactPlanner implements HistoryPlanner {
  private readonly sessions = new Map<string, SessionState>();
  private readonly planned = new WeakMap<readonly ChatMessage[], Planned>();
  private readonly maxSessions: number;
  private codec: Codec | undefined;
  private order = 0;

  constructor(
    private readonly store: Store | null,
    options: HistoryPlannerOptions = {},
  ) {
    this.maxSessions = Math.max(1, options.maxSessions ?? 1024);
    this.codec = options.codec;
  }

  plan(sessionId: string, conversation: Conversation, codec: Codec): PromptPlan {
    this.codec = codec;
    const state = this.session(sessionId);
    const messages = conversation.messages;
    const tools = this.intern(state, toolsKey(conversation.tools));
    const sentKeys = messages.map(contentKey);
    const { nodes, realigned: realignedAt } = walk(state.root, sentKeys, messages);
    const depth = nodes.length - 1;
    // Turns the harness re-serialised are planned as the model sampled them: the same value, the sampled text.
    const { messages: effective, keys, realigned } = realignedAt.length === 0 ? { messages, keys: sentKeys, realigned: [] } : realign(messages, sentKeys, nodes, realignedAt);

    // Same request again (retry / regeneration): the same prompt, in the same place of the tree as the first try.
    if (depth === messages.length) {
      const ids = idsDigest(messages);
      const same = latestOf((nodes[depth] as TrieNode).requests.filter((c) => c.tools === tools && c.requestIdsDigest === ids));
      if (same) {
        return { promptTokens: promptTokensOf(same), parentCallId: same.parentCallId, reusedPrefixTokens: same.reusedPrefixTokens, break: same.break, realigned };
      }
    }

    // Parent: the produced call whose messages ++ [response] is the longest prefix of the request (then the latest).
    let parent: ProducedCall | null = null;
    let parentDepth = 0;
    let toolsMismatch: ProducedCall | null = null;
    for (let k = Math.min(depth, messages.length); k >= 1 && !parent; k--) {
      const ends = (nodes[k] as TrieNode).ends;
      if (ends.length === 0) continue;
      const sameTools = ends.filter((c) => c.tools === tools);
      if (sameTools.length === 0) {
        toolsMismatch ??= latestOf(ends);
        continue;
      }
      const ids = idsDigest(messages, k);
      parent = latestOf(sameTools.filter((c) => c.historyIdsDigest === ids)) ?? latestOf(sameTools);
      parentDepth = k;
    }

    const rendered = codec.renderer.render(effective, conversation.tools, { addGenerationPrompt: true });
    this.planned.set(messages, { length: messages.length, tools: conversation.tools, messages: effective, keys, rendered });
    // A prompt rendered whole (a break, or no parent) keeps nothing as sampled: it is the request as the harness sent it.
    const renderedAsSent = (): string => (realigned.length === 0 ? rendered : codec.renderer.render(messages, conversation.tools, { addGenerationPrompt: true }));

    // A sampled turn after the parent that the harness changed (e.g. re-serialised arguments of the latest turn while
    // an earlier call is still an intact prefix): the prompt still extends the parent, but the rewrite is recorded.
    let laterBreak: HistoryBreak | null = null;
    if (parent && depth > parentDepth && depth < messages.length && messages[depth]?.role === "assistant") {
      const asked = latestOf((nodes[depth] as TrieNode).requests.filter((c) => c.tools === tools));
      if (asked) laterBreak = this.divergence(effective, keys, depth, asked);
    }

    if (parent) {
      const splice = this.spliceOf(parent, codec);
      const full = (b: HistoryBreak): PromptPlan => ({ promptTokens: codec.tokenizer.encode(renderedAsSent()), parentCallId: null, reusedPrefixTokens: 0, break: b, realigned: [] });
      if (!splice.ok) return full({ kind: "template_not_prefix_stable", detail: splice.reason, fromCallId: parent.callId });
      const isPrefix = splice.aText !== null ? hasPrefix(rendered, splice.aText) : rendered.length >= splice.aLength && digest(rendered.slice(0, splice.aLength)) === splice.aDigest;
      if (!isPrefix) {
        return full(this.templateBreak(parent, effective, parentDepth, conversation.tools, rendered, codec));
      }
      const suffix = codec.tokenizer.encode(splice.tail + rendered.slice(splice.aLength));
      const promptTokens = promptTokensOf(parent, parent.completion, suffix);
      return { promptTokens, parentCallId: parent.callId, reusedPrefixTokens: promptTokens.length - suffix.length, break: laterBreak, realigned: realigned.filter((r) => r.messageIndex < parentDepth) };
    }

    return { promptTokens: codec.tokenizer.encode(renderedAsSent()), parentCallId: null, reusedPrefixTokens: 0, break: this.classify(state, effective, keys, nodes, toolsMismatch), realigned: [] };
  }

  remember(record: CallRecord, codec?: Codec): void {
    if (codec) this.codec = codec;
    if (record.status !== "ok" || record.response === null || record.completionTokens.length === 0) return;
    // A session loaded from the store just now already holds the record if it was stored first: add() skips it.
    this.add(this.session(record.sessionId), record);
  }

  /** Drops a session's in-memory state (it is reloaded from the store on its next call). */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  private session(sessionId: string): SessionState {
    let state = this.sessions.get(sessionId);
    if (state) {
      // Least recently used eviction: re-insert to move to the back.
      this.sessions.delete(sessionId);
      this.sessions.set(sessionId, state);
      return state;
    }
    state = { root: new TrieNode(0, null, ""), calls: new Map(), tools: new Map(), recent: [] };
    this.sessions.set(sessionId, state);
    while (this.sessions.size > this.maxSessions) {
      const oldest = this.sessions.keys().next().value as string;
      this.sessions.delete(oldest);
    }
    // A restarted proxy stays token-exact: the session's produced calls come back from the store.
    if (this.store) for (const r of this.store.listCalls({ sessionId })) this.add(state, r);
    return state;
  }

  private add(state: SessionState, record: CallRecord): void {
    if (record.status !== "ok" || record.response === null || record.completionTokens.length === 0) return;
    if (state.calls.has(record.callId)) return;
    const tools = this.intern(state, toolsKey(record.tools));
    // The history as the prompt rendered it (realigned turns as sampled), so the next call's prompt splices onto it.
    // Without the plan (a record reloaded from the store) the request is walked again to find its realigned turns.
    const planned = this.plannedFor(record);
    let messages: readonly ChatMessage[] = record.messages;
    let keys: readonly string[];
    if (planned) ({ messages, keys } = planned);
    else {
      keys = record.messages.map(contentKey);
      const w = walk(state.root, keys, record.messages);
      if (w.realigned.length > 0) ({ messages, keys } = realign(record.messages, keys, w.nodes, w.realigned));
    }
    let node = state.root;
    messages.forEach((m, i) => {
      node = node.child(keys[i] as string, m);
    });
    const requestNode = node;
    const historyNode = node.child(contentKey(record.response), record.response);
    const base = record.parentCallId === null ? undefined : state.calls.get(record.parentCallId);
    const chained = base !== undefined && record.reusedPrefixTokens > 0 && record.reusedPrefixTokens === base.promptLength + base.completion.length;
    const call: ProducedCall = {
      callId: record.callId,
      order: ++this.order,
      parentCallId: record.parentCallId,
      reusedPrefixTokens: record.reusedPrefixTokens,
      break: record.break,
      tools,
      requestIdsDigest: idsDigest(record.messages),
      historyIdsDigest: idsDigest([...record.messages, record.response]),
      requestNode,
      historyNode,
      base: chained ? base : null,
      ownPrompt: chained ? record.promptTokens.slice(record.reusedPrefixTokens) : record.promptTokens.slice(),
      completion: record.completionTokens.slice(),
      promptLength: record.promptTokens.length,
      splice: new Map(),
      pending: { messages: [...messages], response: record.response, tools: record.tools },
    };
    state.calls.set(call.callId, call);
    requestNode.requests.push(call);
    historyNode.ends.push(call);
    for (let n: TrieNode | null = historyNode; n; n = n.parent) n.latest = call;
    if (this.codec) this.spliceOf(call, this.codec, planned?.rendered);
    state.recent.push(call);
    if (state.recent.length > RECENT_TEXTS) {
      // Older calls keep only a digest of their rendered history: memory stays linear in the session.
      const old = state.recent.shift() as ProducedCall;
      for (const info of old.splice.values()) if (info.ok) info.aText = null;
    }
  }

  /** The plan of this record's request, if `plan` saw the very same messages array (the proxy passes it through). */
  private plannedFor(record: CallRecord): Planned | undefined {
    const p = this.planned.get(record.messages);
    return p && p.length === record.messages.length && p.tools === record.tools ? p : undefined;
  }

  /** Splice data of a call for a renderer, computed once from the call's own messages (their ids included). */
  private spliceOf(call: ProducedCall, codec: Codec, renderedRequest?: string): SpliceInfo {
    const cached = call.splice.get(codec.renderer);
    if (cached) return cached;
    let info: SpliceInfo;
    if (call.pending) {
      const { messages, response, tools } = call.pending;
      info = computeSplice(messages, response, tools, call.completion, codec, renderedRequest);
      call.pending = null;
    } else {
      // Another renderer than the first one: rebuild the history from the trie (as first sent).
      const messages = call.historyNode.messages();
      const response = messages.pop() as ChatMessage;
      info = computeSplice(messages, response, JSON.parse(call.tools) as ToolSpec[], call.completion, codec);
    }
    call.splice.set(codec.renderer, info);
    return info;
  }

  /** The parent's rendering is no longer a prefix: because of rewritten call ids the template prints, or the template. */
  private templateBreak(parent: ProducedCall, messages: readonly ChatMessage[], k: number, tools: readonly ToolSpec[], rendered: string, codec: Codec): HistoryBreak {
    if (idsDigest(messages, k) !== parent.historyIdsDigest) {
      const withTheirIds = codec.renderer.render(messages.slice(0, k), tools, { addGenerationPrompt: false });
      if (hasPrefix(rendered, withTheirIds)) {
        return { kind: "rewritten_tool_call_ids", detail: `the harness changed tool-call ids of call ${parent.callId}'s history and the template renders them`, fromCallId: parent.callId };
      }
    }
    // Qwen3-style templates print the reasoning only of turns after the last user query: name the turns it dropped.
    const dropped: number[] = [];
    messages.slice(0, k).forEach((m, i) => {
      const reasoning = m.role === "assistant" ? (m.reasoning ?? "").trim() : "";
      if (reasoning !== "" && !rendered.includes(reasoning)) dropped.push(i);
    });
    if (dropped.length > 0) {
      const detail = `the chat template drops the reasoning of assistant message${dropped.length > 1 ? "s" : ""} ${dropped.join(", ")} once a later user query follows, so call ${parent.callId}'s conversation as sampled is no prefix`;
      return { kind: "template_not_prefix_stable", detail, fromCallId: parent.callId };
    }
    // An empty `<think>` block around the start of the sampled turn (sampled, or put in the generation prompt by Qwen3's
    // enable_thinking=false), which the template prints only for the last turn. A few tokens tell: cheap on every break.
    const last = messages[k - 1];
    const around = codec.tokenizer.decode([...parent.ownPrompt.slice(-8), ...parent.completion.slice(0, 8)]);
    if (last?.role === "assistant" && (last.reasoning ?? "").trim() === "" && around.includes("<think>")) {
      const detail = `the chat template prints the empty <think> block of assistant message ${k - 1} (sampled, or in the generation prompt) only while it is the last turn, so call ${parent.callId}'s conversation as sampled is no prefix`;
      return { kind: "template_not_prefix_stable", detail, fromCallId: parent.callId };
    }
    return { kind: "template_not_prefix_stable", detail: `the chat template renders call ${parent.callId}'s conversation differently once later messages follow`, fromCallId: parent.callId };
  }

  private classify(state: SessionState, messages: readonly ChatMessage[], keys: readonly string[], nodes: readonly TrieNode[], toolsMismatch: ProducedCall | null): HistoryBreak | null {
    const depth = nodes.length - 1;
    if (state.calls.size === 0) {
      // A session's first call is a root; if it carries assistant turns, they were not sampled by this proxy.
      if (!hasAssistant(messages)) return null;
      return { kind: "unknown_assistant_turn", detail: "the session's first call already contains assistant turns this proxy did not produce", fromCallId: null };
    }
    const deepest = nodes[depth] as TrieNode;
    if (depth === 0 || !hasAssistant(messages)) {
      const detail = depth === 0 ? "the request shares no leading message with any earlier call of the session" : "the request carries no assistant turn: a fresh conversation";
      return { kind: "new_root", detail, fromCallId: depth === 0 ? null : (deepest.latest?.callId ?? null) };
    }
    if (toolsMismatch) {
      return { kind: "edited_history", detail: `the tool definitions differ from those of call ${toolsMismatch.callId}, whose history the request extends`, fromCallId: toolsMismatch.callId };
    }
    const latest = deepest.latest;
    if (!latest) return { kind: "new_root", detail: "no related call", fromCallId: null };
    const againstLatest = this.divergence(messages, keys, depth, latest);
    if (againstLatest.kind === "dropped_turns") return againstLatest;
    // When the first differing message is an assistant turn answering a request we served, compare with that answer.
    const asked = messages[depth]?.role === "assistant" ? latestOf(deepest.requests) : null;
    return asked && asked !== latest ? this.divergence(messages, keys, depth, asked) : againstLatest;
  }

  private divergence(messages: readonly ChatMessage[], keys: readonly string[], depth: number, related: ProducedCall): HistoryBreak {
    const historyKeys = related.historyNode.keys();
    return classifyDivergence(messages, keys, depth, { callId: related.callId, history: historyKeys.map(messageFromKey), keys: historyKeys });
  }

  private intern(state: SessionState, tools: string): string {
    const known = state.tools.get(tools);
    if (known !== undefined) return known;
    state.tools.set(tools, tools);
    return tools;
  }

}

/**
 * The request with each value-matched assistant turn replaced by the text the model sampled (from its trie node),
 * keeping the harness's ids: templates that print ids still see the ids the harness sent.
 */
function realign(messages: readonly ChatMessage[], keys: readonly string[], nodes: readonly TrieNode[], at: readonly number[]): { messages: ChatMessage[]; keys: string[]; realigned: RealignedTurn[] } {
  const out = [...messages];
  const outKeys = [...keys];
  const realigned: RealignedTurn[] = [];
  for (const i of at) {
    const node = nodes[i + 1] as TrieNode;
    const sampled = messageFromKey(node.key);
    const sent = messages[i] as ChatMessage;
    out[i] = { ...sent, content: sampled.content, toolCalls: (sent.toolCalls ?? []).map((c, j) => ({ ...c, arguments: sampled.toolCalls?.[j]?.arguments ?? c.arguments })) };
    outKeys[i] = node.key;
    realigned.push({ messageIndex: i, kind: "reserialized_tool_args", fromCallId: latestOf(node.ends)?.callId ?? null });
  }
  return { messages: out, keys: outKeys, realigned };
}

function latestOf(calls: readonly ProducedCall[]): ProducedCall | null {
  let best: ProducedCall | null = null;
  for (const c of calls) if (!best || c.order > best.order) best = c;
  return best;
}
