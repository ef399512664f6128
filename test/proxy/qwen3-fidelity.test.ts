import { readFileSync } from "node:fs";
import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { qwen3Codec, spacedJson, toolCallText } from "../../src/bench/fidelity-model.js";
import type { Codec } from "../../src/chat/codec.js";
import { JinjaChatRenderer } from "../../src/chat/jinja-renderer.js";
import type { ScriptFunction } from "../../src/engine/scripted/index.js";
import type { CallRecord } from "../../src/icr/records.js";
import { qwen3TokenizerFiles } from "../../src/tokenizer/qwen3-data.js";
import { startProxy, expectTokenExactChain, type TestProxy } from "./helpers.js";

/**
 * Each protocol through its official client, with Qwen3's tokenizer and official chat template behind the proxy. A
 * scripted model plays Qwen3 in thinking mode: `<think>` reasoning in every turn, tool arguments printed with spaces
 * and its own key order, two parallel calls in the first turn (their results come back as two tool messages, which
 * the template groups into one user turn). The clients behave like the JavaScript harnesses: they echo reasoning back
 * and re-serialise the arguments (`JSON.stringify(JSON.parse(…))`).
 *
 * Within one user query every follow-up extends its parent token for token. A second user query makes Qwen3's
 * template drop the `<think>` blocks of the earlier turns: that call is a classified break, rendered whole, and the
 * calls after it are token-exact again.
 */

const SCHEMA = { type: "object", properties: { path: { type: "string" }, line: { type: "string" } }, required: ["path", "line"] };
const REASONING = (n: number): string => `Step ${n}: the notes need another line.\nI will write it now.`;

/** Tool messages since the last user query decide the turn: 0 → two parallel writes, 2 → one more, 3 → done. */
const qwen3Model: ScriptFunction = (req) => {
  let lastUser = -1;
  req.messages.forEach((m, i) => {
    if (m.role === "user") lastUser = i;
  });
  const query = req.messages[lastUser]?.content ?? "";
  const results = req.messages.slice(lastUser + 1).filter((m) => m.role === "tool").length;
  // Asked to, the model prints its arguments compactly: not the template's `tojson` spacing.
  const print = query.includes("compact") ? (e: [string, string][]) => JSON.stringify(Object.fromEntries(e)) : spacedJson;
  const write = (line: string): string => toolCallText("write_line", print([["line", line], ["path", "notes.txt"]]));
  // Asked to, the model samples an empty `<think>` block in its tool turns.
  if (query.includes("blank")) return { reasoning: "", content: results === 0 ? write("one") : results === 1 ? write("two") : "Done." };
  if (results === 0) return { reasoning: REASONING(1), content: `${write(`first: ${query}`)}\n${write("second: café ✓")}` };
  if (results === 2) return { reasoning: REASONING(2), content: write("third") };
  return { reasoning: "All lines are written.", content: `Done with "${query}".` };
};

/** A client of one protocol keeping the conversation in its own wire shape. */
interface Client {
  /** One model call; returns the tool calls it asked for (ids and parsed arguments). */
  call(): Promise<{ id: string; args: Record<string, unknown> }[]>;
  toolResults(results: { id: string; output: string }[]): void;
  user(text: string): void;
  /** Whether the last answer carried the reasoning in the protocol's own field. */
  lastReasoning: string;
}

/** JS harnesses parse the arguments and send them back with JSON.stringify: same value, compact text. */
const reserialise = (args: string): string => JSON.stringify(JSON.parse(args));

function chatClient(client: OpenAI, echoReasoning = true): Client {
  const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: "function", function: { name: "write_line", description: "Append a line to a file", parameters: SCHEMA } }];
  const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "system", content: "You keep notes." }];
  const c: Client = {
    lastReasoning: "",
    async call() {
      const r = await client.chat.completions.create({ model: "policy", messages, tools });
      const m = r.choices[0]?.message as OpenAI.Chat.ChatCompletionMessage & { reasoning_content?: string };
      c.lastReasoning = m.reasoning_content ?? "";
      const calls = (m.tool_calls ?? []).flatMap((t) => (t.type === "function" ? [t] : []));
      messages.push({ role: "assistant", content: m.content, ...(echoReasoning ? { reasoning_content: m.reasoning_content } : {}), tool_calls: calls.map((t) => ({ ...t, function: { ...t.function, arguments: reserialise(t.function.arguments) } })) } as OpenAI.Chat.ChatCompletionAssistantMessageParam);
      return calls.map((t) => ({ id: t.id, args: JSON.parse(t.function.arguments) as Record<string, unknown> }));
    },
    toolResults: (results) => messages.push(...results.map((r) => ({ role: "tool" as const, tool_call_id: r.id, content: r.output }))),
    user: (text) => messages.push({ role: "user", content: text }),
  };
  return c;
}

function responsesClient(client: OpenAI): Client {
  type Item = OpenAI.Responses.ResponseInputItem;
  const tools: OpenAI.Responses.Tool[] = [{ type: "function", name: "write_line", description: "Append a line to a file", parameters: SCHEMA, strict: false }];
  const input: Item[] = [{ role: "developer", content: "You keep notes." }];
  const c: Client = {
    lastReasoning: "",
    async call() {
      const r = await client.responses.create({ model: "policy", input, tools, store: false });
      c.lastReasoning = r.output.flatMap((o) => (o.type === "reasoning" ? (o.content ?? []).map((x) => x.text) : [])).join("");
      input.push(...(r.output.map((o) => (o.type === "function_call" ? { ...o, arguments: reserialise(o.arguments) } : o)) as Item[]));
      return r.output.flatMap((o) => (o.type === "function_call" ? [{ id: o.call_id, args: JSON.parse(o.arguments) as Record<string, unknown> }] : []));
    },
    toolResults: (results) => input.push(...results.map((r): Item => ({ type: "function_call_output", call_id: r.id, output: r.output }))),
    user: (text) => input.push({ role: "user", content: text }),
  };
  return c;
}

function anthropicClient(client: Anthropic): Client {
  const tools: Anthropic.Tool[] = [{ name: "write_line", description: "Append a line to a file", input_schema: SCHEMA as Anthropic.Tool.InputSchema }];
  const messages: Anthropic.MessageParam[] = [];
  const c: Client = {
    lastReasoning: "",
    async call() {
      const r = await client.messages.create({ model: "policy", max_tokens: 1000, system: "You keep notes.", tools, messages });
      c.lastReasoning = r.content.flatMap((b) => (b.type === "thinking" ? [b.thinking] : [])).join("");
      // Claude Code sends thinking blocks (with their signature) and tool_use inputs back as it received them.
      messages.push({ role: "assistant", content: r.content });
      return r.content.flatMap((b) => (b.type === "tool_use" ? [{ id: b.id, args: b.input as Record<string, unknown> }] : []));
    },
    toolResults: (results) => messages.push({ role: "user", content: results.map((r) => ({ type: "tool_result" as const, tool_use_id: r.id, content: r.output })) }),
    user: (text) => messages.push({ role: "user", content: text }),
  };
  return c;
}

/** Runs a query to its end: tool calls answered until the model stops calling tools. */
async function query(client: Client, text: string, withReasoning = true): Promise<void> {
  client.user(text);
  for (let i = 0; i < 5; i++) {
    const calls = await client.call();
    if (withReasoning) expect(client.lastReasoning, "the reasoning reaches the client in its protocol's field").not.toBe("");
    if (calls.length === 0) return;
    client.toolResults(calls.map((c) => ({ id: c.id, output: `wrote ${JSON.stringify(c.args.line)}` })));
  }
  throw new Error("the query did not end");
}

const PROTOCOLS: [string, (p: TestProxy, apiKey: string) => Client][] = [
  ["openai-chat", (p, key) => chatClient(p.openai(key))],
  ["openai-responses", (p, key) => responsesClient(p.openai(key))],
  ["anthropic-messages", (p, key) => anthropicClient(p.anthropic(key))],
];

describe("Qwen3's official chat template through the proxy, every protocol through its official client", () => {
  let p: TestProxy;
  let codec: Codec;
  beforeAll(async () => {
    codec = qwen3Codec();
    p = await startProxy(qwen3Model, { engine: { codec } });
  }, 60_000);
  afterAll(async () => p?.close());

  /** The prompt as our tokenizer encodes the official template's rendering of what the client sent. */
  const encodeRendered = (r: CallRecord): number[] => codec.tokenizer.encode(codec.renderer.render(r.messages, r.tools, { addGenerationPrompt: true }));

  for (const [protocol, makeClient] of PROTOCOLS) {
    it(`${protocol}: tool turns with <think> extend their parent token for token; a second query is a classified template break`, { timeout: 120_000 }, async () => {
      const { sessionId, apiKey } = p.session();
      const client = makeClient(p, apiKey);
      await query(client, "morning");
      const first = p.calls(sessionId);
      expect(first.map((r) => r.response?.toolCalls?.length ?? 0)).toEqual([2, 1, 0]);
      for (const r of first) {
        expect(r.protocol).toBe(protocol);
        // Sampled as Qwen3 samples: reasoning first, then the calls; parsed back into reasoning + tool calls.
        expect(codec.tokenizer.decode(r.completionTokens)).toMatch(/^<think>\n[^]+\n<\/think>\n\n/);
        expect(r.response?.reasoning).toBeTruthy();
      }
      // The two results of the parallel calls are one user turn in Qwen3's template.
      expect(codec.tokenizer.decode(first[1]!.promptTokens)).toMatch(/<\|im_start\|>user\n<tool_response>\nwrote "first: morning"\n<\/tool_response>\n<tool_response>\nwrote "second: café ✓"\n<\/tool_response><\|im_end\|>\n<\|im_start\|>assistant\n$/);
      expectTokenExactChain(first);
      for (const r of first) expect(r.promptTokens).toEqual(encodeRendered(r));
      if (protocol !== "anthropic-messages") {
        // The client re-serialised the arguments: same value, other text. The sampled turns were kept (realigned).
        expect(first[1]!.realigned).toEqual([{ messageIndex: 2, kind: "reserialized_tool_args", fromCallId: first[0]!.callId }]);
        expect(first[2]!.realigned?.map((t) => t.messageIndex)).toEqual([2, 5]);
      }

      await query(client, "evening");
      const all = p.calls(sessionId);
      expect(all).toHaveLength(6);
      const [, , third, fourth, ...rest] = all as [CallRecord, CallRecord, CallRecord, CallRecord, CallRecord, CallRecord];
      // Qwen3 drops the reasoning of assistant turns before the last user query: the earlier calls are no prefix.
      expect(fourth.break?.kind).toBe("template_not_prefix_stable");
      expect(fourth.break?.fromCallId).toBe(third.callId);
      expect(fourth.break?.detail).toMatch(/drops the reasoning of assistant messages 2, 5, 7 once a later user query follows/);
      expect(fourth.parentCallId).toBeNull();
      const text = codec.tokenizer.decode(fourth.promptTokens);
      expect(text).not.toContain("Step 1:");
      expect(text).not.toContain("<think>");
      expect(fourth.promptTokens).toEqual(encodeRendered(fourth));
      // Within the new query the calls extend their parent token for token again.
      expectTokenExactChain([fourth, ...rest]);
      for (const r of rest) expect(r.promptTokens).toEqual(encodeRendered(r));
    });
  }

  it("a model that prints its arguments unlike the template's tojson keeps its sampled tokens in the next prompt", { timeout: 60_000 }, async () => {
    const { sessionId, apiKey } = p.session();
    await query(chatClient(p.openai(apiKey)), "compact");
    const calls = p.calls(sessionId);
    expect(codec.tokenizer.decode(calls[0]!.completionTokens)).toContain('{"line":"first: compact","path":"notes.txt"}');
    expectTokenExactChain(calls);
    // The template would print `{"line": "first: compact", …}`: the prompt is not a re-rendering, it is what was sampled.
    expect(codec.tokenizer.decode(calls[1]!.promptTokens)).toContain('"arguments": {"line":"first: compact","path":"notes.txt"}}');
    expect(calls[1]!.promptTokens).not.toEqual(encodeRendered(calls[1]!));
  });

  it("a client that does not send the reasoning back: each follow-up is a classified stripped_reasoning break", { timeout: 60_000 }, async () => {
    const { sessionId, apiKey } = p.session();
    await query(chatClient(p.openai(apiKey), false), "no echo");
    const calls = p.calls(sessionId);
    expect(calls).toHaveLength(3);
    // The template prints reasoning after the last query, so the prompt without it cannot extend the sampled turn.
    for (const [i, c] of calls.entries()) {
      if (i === 0) continue;
      expect(c.break?.kind).toBe("stripped_reasoning");
      expect(c.break?.fromCallId).toBe(calls[i - 1]!.callId);
      expect(c.parentCallId).toBeNull();
      // Rendered whole from what the client sent: no reasoning in the history.
      expect(c.promptTokens).toEqual(encodeRendered(c));
      expect(codec.tokenizer.decode(c.promptTokens)).not.toContain("<think>");
    }
  });

  it("an empty <think> block is printed only in the last turn: the next call is a classified template break", { timeout: 60_000 }, async () => {
    const { sessionId, apiKey } = p.session();
    await query(chatClient(p.openai(apiKey)), "blank", false);
    const calls = p.calls(sessionId);
    expect(codec.tokenizer.decode(calls[0]!.completionTokens)).toMatch(/^<think>\n\n<\/think>\n\n<tool_call>/);
    expect(calls[1]!.break?.kind).toBe("template_not_prefix_stable");
    expect(calls[1]!.break?.fromCallId).toBe(calls[0]!.callId);
    expect(calls[1]!.break?.detail).toMatch(/prints the empty <think> block of assistant message 2 .* only while it is the last turn/);
    expect(calls[1]!.promptTokens).toEqual(encodeRendered(calls[1]!));
  });

  it("with enable_thinking=false the generation prompt's empty <think> block is gone from the history: every follow-up is a classified template break", { timeout: 60_000 }, async () => {
    const source = (JSON.parse(readFileSync(qwen3TokenizerFiles().tokenizerConfigJson, "utf8")) as { chat_template: string }).chat_template;
    const noThinking: Codec = { tokenizer: codec.tokenizer, renderer: new JinjaChatRenderer(source, { eosToken: "<|im_end|>", variables: { enable_thinking: false } }) };
    const q = await startProxy(qwen3Model, { engine: { codec: noThinking } });
    try {
      const { sessionId, apiKey } = q.session();
      await query(chatClient(q.openai(apiKey)), "blank", false);
      const calls = q.calls(sessionId);
      expect(calls).toHaveLength(3);
      expect(codec.tokenizer.decode(calls[0]!.promptTokens)).toMatch(/<\|im_start\|>assistant\n<think>\n\n<\/think>\n\n$/);
      for (const c of calls.slice(1)) {
        expect(c.break?.kind).toBe("template_not_prefix_stable");
        expect(c.break?.detail).toContain("empty <think> block");
        expect(c.promptTokens).toEqual(noThinking.tokenizer.encode(noThinking.renderer.render(c.messages, c.tools, { addGenerationPrompt: true })));
      }
    } finally {
      await q.close();
    }
  });
});
