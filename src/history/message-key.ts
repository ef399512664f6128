import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { toolsJson } from "../chat/tools-json.js";
import type { ChatMessage, Role, ToolSpec } from "../chat/types.js";

/**
 * Message identity for history matching. Two messages are "the same turn" when role, content, reasoning, tool-call
 * names + argument text, and the tool name agree; call ids are compared separately (harnesses rewrite them, and most
 * templates never render them). Empty and missing fields are the same thing.
 *
 * The key is the canonical text itself, not a digest: V8 hashes a string once and compares on hit, which is cheaper
 * than a cryptographic digest per message, and the trie needs the content anyway.
 */
export function contentKey(m: ChatMessage): string {
  const calls = m.toolCalls && m.toolCalls.length > 0 ? m.toolCalls.map((c) => [c.name, c.arguments]) : 0;
  return JSON.stringify([m.role, m.content, m.reasoning ?? "", m.name ?? "", calls]);
}

/** The message a content key was made from, without ids (ids are not part of the key). */
export function messageFromKey(key: string): ChatMessage {
  const [role, content, reasoning, name, calls] = JSON.parse(key) as [Role, string, string, string, [string, string][] | 0];
  const m: ChatMessage = { role, content };
  if (reasoning !== "") m.reasoning = reasoning;
  if (name !== "") m.name = name;
  if (calls !== 0) m.toolCalls = calls.map(([n, args], i) => ({ id: `call_${i}`, name: n, arguments: args }));
  return m;
}

/** The ids a message carries (tool-call ids, or the id a tool result answers). */
export function idsOf(m: ChatMessage): string {
  const calls = m.toolCalls && m.toolCalls.length > 0 ? m.toolCalls.map((c) => c.id).join(",") : "";
  return `${calls}|${m.toolCallId ?? ""}`;
}

/**
 * A key for the ids of the first `count` messages, compared for equality only. Short id lists (the usual case: a
 * session has a few dozen tool calls) are the key themselves; a sha-256 costs more than the comparison it saves.
 * The raw form always contains "|", which a base64url digest never does, so the two forms cannot collide.
 */
export function idsDigest(messages: readonly ChatMessage[], count = messages.length): string {
  let joined = "";
  for (let i = 0; i < count; i++) joined += idsOf(messages[i] as ChatMessage) + "\u0000";
  return joined.length <= 1024 ? joined : createHash("sha256").update(joined).digest("base64url");
}

export function digest(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}

/** Tools as the template sees them, in order (key order matters: templates print `tojson` verbatim). */
export function toolsKey(tools: readonly ToolSpec[]): string {
  return toolsJson(tools);
}

export function hasAssistant(messages: readonly ChatMessage[]): boolean {
  return messages.some((m) => m.role === "assistant");
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/** JSON text with object keys sorted and no spacing: equal for texts that parse to the same value. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * Identity of an assistant turn up to the form of its tool-call arguments: equal for turns whose arguments parse to the
 * same JSON values (key order, spacing, escapes). Null for other messages (their form is their identity), and for
 * arguments that are not JSON.
 */
export function valueKey(m: ChatMessage): string | null {
  if (m.role !== "assistant" || !m.toolCalls || m.toolCalls.length === 0) return null;
  const calls: [string, string][] = [];
  for (const c of m.toolCalls) {
    const parsed = parseJson(c.arguments);
    if (!parsed.ok) return null;
    calls.push([c.name, canonicalJson(parsed.value)]);
  }
  return JSON.stringify([m.role, m.content, m.reasoning ?? "", m.name ?? "", calls]);
}

/** Argument texts that differ but parse to the same JSON value (key order, spacing, escapes): a re-serialisation. */
export function sameJson(a: string, b: string): boolean {
  if (a === b) return true;
  const x = parseJson(a);
  const y = parseJson(b);
  return x.ok && y.ok && isDeepStrictEqual(x.value, y.value);
}
