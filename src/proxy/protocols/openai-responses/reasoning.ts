/**
 * Reasoning items. Stateless clients (Codex with store: false) only get reasoning back through
 * `encrypted_content`; ours is not encrypted, just the reasoning text under a marker, so that the proxy can read
 * the turn back token-exactly whichever fields the client chooses to echo.
 */
const PREFIX = "hrl1:";

export function encodeReasoning(text: string): string {
  return PREFIX + Buffer.from(text, "utf8").toString("base64");
}

function texts(list: unknown, type: string): string[] | null {
  if (!Array.isArray(list)) return null;
  const out: string[] = [];
  for (const p of list as unknown[]) {
    const part = (p ?? {}) as Record<string, unknown>;
    if (part.type === type && typeof part.text === "string") out.push(part.text);
  }
  return out.length > 0 ? out : null;
}

/** The reasoning text of an input `reasoning` item: its reasoning_text content, our encoded copy, or its summary. */
export function decodeReasoning(item: Record<string, unknown>): string {
  const content = texts(item.content, "reasoning_text");
  if (content) return content.join("\n");
  const enc = item.encrypted_content;
  if (typeof enc === "string" && enc.startsWith(PREFIX)) return Buffer.from(enc.slice(PREFIX.length), "base64").toString("utf8");
  const summary = texts(item.summary, "summary_text");
  return summary ? summary.join("\n") : "";
}
