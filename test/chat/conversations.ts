import type { ChatMessage, ToolSpec } from "../../src/chat/types.js";

/** Deterministic PRNG for reproducible random conversations (the project's seeded PRNG). */
export { mulberry32 as rng } from "../../src/core/random.js";

const WORDS = ["ls", "the file", "é", "😀", "中文", "\n", "  ", "\"quoted\"", "back\\slash", "<b>", "tab\t", "x", "{json}", "[1]", "\u2028", ""];

export function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)] as T;
}

export function randomText(r: () => number, maxWords = 6): string {
  let s = "";
  const n = Math.floor(r() * (maxWords + 1));
  for (let i = 0; i < n; i++) s += pick(r, WORDS) + (r() < 0.5 ? " " : "");
  return s;
}

export function randomArgs(r: () => number, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const n = Math.floor(r() * 4);
  for (let i = 0; i < n; i++) {
    const key = pick(r, ["cmd", "path", "n", "flag", "nested", "list", "é", "with space"]);
    const kind = Math.floor(r() * 6);
    out[key] =
      kind === 0 ? randomText(r) : kind === 1 ? Math.floor(r() * 1000) - 500 : kind === 2 ? r() < 0.5 : kind === 3 ? null : kind === 4 && depth < 2 ? randomArgs(r, depth + 1) : [randomText(r, 2), 1.5];
  }
  return out;
}

export function randomTools(r: () => number): ToolSpec[] {
  const n = Math.floor(r() * 3);
  const tools: ToolSpec[] = [];
  for (let i = 0; i < n; i++) {
    const t: ToolSpec = { name: `tool_${i}`, parameters: { type: "object", properties: { cmd: { type: "string", description: randomText(r, 3) } } } };
    if (r() < 0.6) t.description = randomText(r, 4);
    tools.push(t);
  }
  return tools;
}

/** A conversation shaped like what harnesses send: optional system, turns, tool calls with (mostly) JSON arguments. */
export function randomConversation(r: () => number): ChatMessage[] {
  const msgs: ChatMessage[] = [];
  if (r() < 0.7) msgs.push({ role: "system", content: randomText(r) });
  const turns = 1 + Math.floor(r() * 5);
  for (let t = 0; t < turns; t++) {
    msgs.push({ role: "user", content: randomText(r) });
    if (r() < 0.1) msgs.push({ role: "system", content: randomText(r) });
    const a: ChatMessage = { role: "assistant", content: r() < 0.3 ? "" : randomText(r) };
    if (r() < 0.3) a.reasoning = randomText(r);
    const calls = Math.floor(r() * 3);
    if (calls > 0) {
      a.toolCalls = [];
      for (let c = 0; c < calls; c++) {
        const args = r() < 0.85 ? JSON.stringify(randomArgs(r)) : pick(r, ["not json", "[1, 2]", "", "{\"a\": 1"]);
        a.toolCalls.push({ id: `call_${t}_${c}`, name: pick(r, ["bash", "read_file", "é_tool"]), arguments: args });
      }
    }
    if (t < turns - 1 || r() < 0.5) {
      msgs.push(a);
      for (const c of a.toolCalls ?? []) msgs.push({ role: "tool", content: randomText(r), toolCallId: c.id });
    }
  }
  return msgs;
}
