import Database from "better-sqlite3";
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SqliteStore } from "../../src/store/sqlite.js";
import { startProxy, expectTokenExactChain, weatherAgent, WEATHER_TOOL_SCHEMA, type TestProxy } from "./helpers.js";

const tools: OpenAI.Chat.ChatCompletionTool[] = [{ type: "function", function: { name: "get_weather", description: "Weather for a city", parameters: WEATHER_TOOL_SCHEMA } }];

describe("proxy: OpenAI Chat Completions through the official openai client", () => {
  let p: TestProxy;
  beforeAll(async () => {
    p = await startProxy(weatherAgent);
  });
  afterAll(async () => p.close());

  it("answers a non-streamed request and records prompt, completion and sampling", async () => {
    const { sessionId, apiKey } = p.session();
    const r = await p.openai(apiKey).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "hello" }], temperature: 0.2, max_tokens: 300 });
    expect(r.object).toBe("chat.completion");
    expect(r.choices[0]?.message.content).toBe("Echo: hello — ünïcødé ✓ 日本語 🎉");
    expect(r.choices[0]?.finish_reason).toBe("stop");
    const [rec] = p.calls(sessionId);
    expect(rec?.protocol).toBe("openai-chat");
    expect(rec?.status).toBe("ok");
    expect(r.usage?.prompt_tokens).toBe(rec?.promptTokens.length);
    expect(r.usage?.completion_tokens).toBe(rec?.completionTokens.length);
    expect(p.engine.tokenizer.decode(rec?.completionTokens ?? [])).toBe("Echo: hello — ünïcødé ✓ 日本語 🎉<|im_end|>");
    expect(rec?.samplingRequested).toEqual({ temperature: 0.2, max_tokens: 300 });
    expect(rec?.samplingUsed?.temperature).toBe(1);
    expect(rec?.samplingUsed?.maxTokens).toBe(300);
    expect(rec?.response?.content).toBe(r.choices[0]?.message.content);
    expect(rec?.parentCallId).toBeNull();
  });

  it("samples with the run's top_k whatever the harness asks for, and records it as the sampling used", async () => {
    const q = await startProxy(weatherAgent, { proxy: { sampling: { topK: 5000 } } });
    try {
      const { sessionId, apiKey } = q.session();
      await q.openai(apiKey).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "hello" }], top_p: 0.5 });
      const [rec] = q.calls(sessionId);
      expect(rec?.samplingUsed).toMatchObject({ temperature: 1, topK: 5000, topP: 1 });
    } finally {
      await q.close();
    }
  });

  it("records the request body exactly as the client sent it (formatting and key order kept)", async () => {
    const { sessionId, apiKey } = p.session();
    const body = JSON.stringify({ max_tokens: 50, messages: [{ content: "hello", role: "user" }], model: "policy", temperature: 0.5 }, null, 2);
    const res = await fetch(`${p.urls.openai}/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" }, body });
    expect(res.status).toBe(200);
    const [rec] = p.calls(sessionId);
    expect(rec?.rawRequest).toEqual(JSON.parse(body));
    const db = new Database((p.store as SqliteStore).path, { readonly: true });
    const stored = db.prepare("SELECT raw_request_json FROM calls WHERE call_id = ?").pluck().get(rec?.callId);
    db.close();
    expect(stored).toBe(body);
  });

  it("streams content in several chunks that add up to the answer, with usage when asked", async () => {
    const { apiKey } = p.session();
    const stream = await p.openai(apiKey).chat.completions.create({
      model: "policy",
      messages: [{ role: "user", content: "stream me" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const deltas: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (c?.delta.content) deltas.push(c.delta.content);
      if (c?.finish_reason) finish = c.finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(deltas.join("")).toBe("Echo: stream me — ünïcødé ✓ 日本語 🎉");
    expect(deltas.length).toBeGreaterThan(10);
    // UTF-8 safe: no delta carries a broken character.
    expect(deltas.join("")).not.toContain("\uFFFD");
    expect(finish).toBe("stop");
    expect(usage?.completion_tokens).toBeGreaterThan(0);
  });

  it("returns a single tool call, then answers with the tool result (stream accumulated by the SDK helper)", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.openai(apiKey);
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: "system", content: "You are a weather bot." },
      { role: "user", content: "what is the weather?" },
    ];
    const first = await client.chat.completions.stream({ model: "policy", messages, tools }).finalChatCompletion();
    const msg = first.choices[0]?.message;
    expect(first.choices[0]?.finish_reason).toBe("tool_calls");
    expect(msg?.tool_calls).toHaveLength(1);
    const call = msg?.tool_calls?.[0];
    if (call?.type !== "function") throw new Error("expected a function call");
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" });
    expect(call.id).toMatch(/^call_/);
    messages.push({ role: "assistant", content: msg?.content ?? null, tool_calls: msg?.tool_calls ?? [] });
    messages.push({ role: "tool", tool_call_id: call.id, content: "sunny, 21C" });
    const second = await client.chat.completions.create({ model: "policy", messages, tools });
    expect(second.choices[0]?.message.content).toBe("Results: sunny, 21C");
    expectTokenExactChain(p.calls(sessionId));
  });

  it("returns parallel tool calls and keeps a multi-turn session token-exact (stream and non-stream mixed)", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.openai(apiKey);
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "developer", content: "Be brief." }, { role: "user", content: "parallel weather please" }];
    const r1 = await client.chat.completions.create({ model: "policy", messages, tools, tool_choice: "auto" });
    const m1 = r1.choices[0]?.message;
    expect(m1?.content).toBe("Checking both cities.");
    expect(m1?.tool_calls?.map((c) => (c.type === "function" ? JSON.parse(c.function.arguments) : null))).toEqual([{ city: "Paris" }, { city: "Tokyo", unit: "C" }]);
    messages.push({ role: "assistant", content: m1?.content ?? null, tool_calls: m1?.tool_calls ?? [] });
    for (const c of m1?.tool_calls ?? []) messages.push({ role: "tool", tool_call_id: c.id, content: `weather for ${c.id.slice(0, 5)}` });
    const r2 = await client.chat.completions.stream({ model: "policy", messages, tools }).finalChatCompletion();
    expect(r2.choices[0]?.message.content).toBe("Results: weather for call_ | weather for call_");
    messages.push({ role: "assistant", content: r2.choices[0]?.message.content ?? "" });
    messages.push({ role: "user", content: "thanks" });
    const r3 = await client.chat.completions.create({ model: "policy", messages, tools });
    expect(r3.choices[0]?.message.content).toContain("Echo: thanks");
    const records = p.calls(sessionId);
    expect(records).toHaveLength(3);
    expect(records[0]?.messages[0]).toEqual({ role: "system", content: "Be brief." });
    expectTokenExactChain(records);
  });

  it("streams reasoning_content before the content", async () => {
    const { apiKey } = p.session();
    const final = await p.openai(apiKey).chat.completions.stream({ model: "policy", messages: [{ role: "user", content: "think" }] }).finalChatCompletion();
    const message = final.choices[0]?.message as unknown as { content: string; reasoning_content?: string };
    expect(message.content).toBe("The answer is 4.");
    expect(message.reasoning_content).toBe("The user wants me to think. 2+2=4.");
  });

  it("lists the served model and its aliases", async () => {
    const { apiKey } = p.session();
    const models = await p.openai(apiKey).models.list();
    expect(models.data.map((m) => m.id)).toEqual(["policy"]);
  });
});
