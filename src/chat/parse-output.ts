import { scanObjectMembers } from "./json-scan.js";

/** [start, end) in UTF-16 code units of the parsed text. */
export interface Span {
  start: number;
  end: number;
}

export interface ParsedToolCall {
  name: string;
  arguments: Record<string, unknown>;
  /** The arguments as the model wrote them: the JSON object's text (or, for a JSON-encoded string, the string's value). */
  argumentsText: string;
}

export interface ToolCallSpans {
  /** `<tool_call>` through `</tool_call>`. */
  block: Span;
  /** The name string's characters, without the quotes. */
  name: Span;
  /** The arguments value (the object with its braces, or the string literal); null when the call had no arguments. */
  arguments: Span | null;
}

export interface MalformedToolCall {
  /** The whole block as sampled. */
  text: string;
  reason: string;
  span: Span;
}

export interface OutputSpans {
  /** The trimmed reasoning text (`text.slice(start, end) === reasoning`). */
  reasoning?: Span;
  /** The non-blank pieces of content outside reasoning and tool-call blocks, trimmed. */
  content: Span[];
  /** One per entry of `toolCalls`, same order. */
  toolCalls: ToolCallSpans[];
  /** The trailing end-of-turn token text, when present. */
  endOfTurn?: Span;
}

export interface ParsedAssistantOutput {
  content: string;
  /** Present only when non-empty. */
  reasoning?: string;
  toolCalls: ParsedToolCall[];
  malformed: MalformedToolCall[];
  spans: OutputSpans;
}

export interface ParseOptions {
  /** End-of-turn texts removed from the end of the output. */
  endOfTurnTexts?: readonly string[];
}

const OPEN = "<tool_call>";
const CLOSE = "</tool_call>";
const THINK_OPEN = "<think>";
const THINK_CLOSE = "</think>";
const DEFAULT_EOT = ["<|im_end|>", "<|endoftext|>"];

function trimmedSpan(text: string, start: number, end: number): Span | null {
  while (start < end && /\s/.test(text[start] as string)) start++;
  while (end > start && /\s/.test(text[end - 1] as string)) end--;
  return start < end ? { start, end } : null;
}

/**
 * Parses sampled completion text in the Hermes/Qwen format: optional `<think>…</think>` reasoning (also when the
 * generation prompt already opened `<think>` and only `</think>` was sampled), content, any number of
 * `<tool_call>{"name": …, "arguments": {…}}</tool_call>` blocks (several = parallel calls), and a trailing end-of-turn
 * token. Blocks that do not hold a valid call are reported in `malformed` (and left out of content), never thrown.
 */
export function parseAssistantOutput(text: string, options: ParseOptions = {}): ParsedAssistantOutput {
  const spans: OutputSpans = { content: [], toolCalls: [] };
  let end = text.length;
  for (const eot of options.endOfTurnTexts ?? DEFAULT_EOT) {
    if (eot && text.endsWith(eot, end)) {
      spans.endOfTurn = { start: end - eot.length, end };
      end -= eot.length;
      break;
    }
  }

  let pos = 0;
  let reasoning: string | undefined;
  const lead = trimmedSpan(text, 0, end);
  if (lead && text.startsWith(THINK_OPEN, lead.start)) {
    const innerStart = lead.start + THINK_OPEN.length;
    const close = text.indexOf(THINK_CLOSE, innerStart);
    const innerEnd = close >= 0 && close < end ? close : end;
    const r = trimmedSpan(text, innerStart, innerEnd);
    reasoning = r ? text.slice(r.start, r.end) : "";
    if (r) spans.reasoning = r;
    pos = innerEnd === end ? end : innerEnd + THINK_CLOSE.length;
  } else {
    // The generation prompt may already contain `<think>`: then the sample starts inside the reasoning.
    const close = text.indexOf(THINK_CLOSE);
    const firstCall = text.indexOf(OPEN);
    const stray = text.indexOf(THINK_OPEN);
    if (close >= 0 && close < end && (firstCall < 0 || close < firstCall) && (stray < 0 || stray > close)) {
      const r = trimmedSpan(text, 0, close);
      reasoning = r ? text.slice(r.start, r.end) : "";
      if (r) spans.reasoning = r;
      pos = close + THINK_CLOSE.length;
    }
  }

  const toolCalls: ParsedToolCall[] = [];
  const malformed: MalformedToolCall[] = [];
  const contentParts: string[] = [];
  const addContent = (s: number, e: number): void => {
    const t = trimmedSpan(text, s, e);
    if (t) {
      spans.content.push(t);
      contentParts.push(text.slice(t.start, t.end));
    }
  };
  while (pos < end) {
    const open = text.indexOf(OPEN, pos);
    if (open < 0 || open >= end) {
      addContent(pos, end);
      break;
    }
    addContent(pos, open);
    const innerStart = open + OPEN.length;
    const close = text.indexOf(CLOSE, innerStart);
    if (close < 0 || close + CLOSE.length > end) {
      malformed.push({ text: text.slice(open, end), reason: "unterminated <tool_call> block", span: { start: open, end } });
      break;
    }
    const block: Span = { start: open, end: close + CLOSE.length };
    const r = parseCallBody(text, innerStart, close);
    if ("reason" in r) malformed.push({ text: text.slice(block.start, block.end), reason: r.reason, span: block });
    else {
      toolCalls.push(r.call);
      spans.toolCalls.push({ block, name: r.name, arguments: r.args });
    }
    pos = block.end;
  }

  const out: ParsedAssistantOutput = { content: contentParts.join("\n"), toolCalls, malformed, spans };
  // An empty think block (e.g. Qwen3 with thinking off) is no reasoning.
  if (reasoning) out.reasoning = reasoning;
  return out;
}

type BodyResult = { call: ParsedToolCall; name: Span; args: Span | null } | { reason: string };

function parseCallBody(text: string, start: number, end: number): BodyResult {
  const body = text.slice(start, end);
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (e) {
    return { reason: `invalid JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { reason: "the block is not a JSON object" };
  const obj = value as Record<string, unknown>;
  const name = obj.name;
  if (typeof name !== "string" || name.length === 0) return { reason: 'missing or empty "name"' };
  const members = scanObjectMembers(body);
  // Duplicate keys: JSON.parse keeps the last one, so do we.
  const nameAt = members.filter((m) => m.key === "name").pop();
  const argsKey = "arguments" in obj ? "arguments" : "parameters" in obj ? "parameters" : null;
  const argsAt = argsKey === null ? undefined : members.filter((m) => m.key === argsKey).pop();
  if (!nameAt) return { reason: 'missing "name"' };
  const nameSpan = { start: start + nameAt.valueStart + 1, end: start + nameAt.valueEnd - 1 };
  if (argsKey === null || !argsAt) return { call: { name, arguments: {}, argumentsText: "{}" }, name: nameSpan, args: null };
  const argsSpan = { start: start + argsAt.valueStart, end: start + argsAt.valueEnd };
  const raw = obj[argsKey];
  if (typeof raw === "string") {
    // Some models JSON-encode the arguments object as a string.
    try {
      const inner: unknown = JSON.parse(raw);
      if (inner !== null && typeof inner === "object" && !Array.isArray(inner)) {
        return { call: { name, arguments: inner as Record<string, unknown>, argumentsText: raw }, name: nameSpan, args: argsSpan };
      }
    } catch {
      // fall through
    }
    return { reason: `"${argsKey}" is a string that does not hold a JSON object` };
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return { reason: `"${argsKey}" is not a JSON object` };
  return {
    call: { name, arguments: raw as Record<string, unknown>, argumentsText: text.slice(argsSpan.start, argsSpan.end) },
    name: nameSpan,
    args: argsSpan,
  };
}
