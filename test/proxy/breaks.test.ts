import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallRecord } from "../../src/icr/records.js";
import { startProxy, weatherAgent, WEATHER_TOOL_SCHEMA, type TestProxy } from "./helpers.js";

const chatTools: OpenAI.Chat.ChatCompletionTool[] = [{ type: "function", function: { name: "get_weather", parameters: WEATHER_TOOL_SCHEMA } }];

/** A broken history is rendered from what the harness sent: the prompt is exactly that rendering. */
function expectRenderedFromRequest(p: TestProxy, rec: CallRecord | undefined): void {
  const text = p.engine.renderer.render(rec?.messages ?? [], rec?.tools ?? [], { addGenerationPrompt: true });
  expect(rec?.promptTokens).toEqual(p.engine.tokenizer.encode(text));
}

describe("proxy: history rewritten by the harness becomes a classified break in the record", () => {
  let p: TestProxy;
  beforeAll(async () => {
    p = await startProxy(weatherAgent);
  });
  afterAll(async () => p.close());

  it("compaction (Anthropic): middle turns replaced by a summary, the history shrank", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.anthropic(apiKey);
    const system = "You are a coding agent.";
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: "first question" }];
    const r1 = await client.messages.create({ model: "policy", max_tokens: 200, system, messages });
    messages.push({ role: "assistant", content: r1.content }, { role: "user", content: "second question" });
    const r2 = await client.messages.create({ model: "policy", max_tokens: 200, system, messages });
    messages.push({ role: "assistant", content: r2.content }, { role: "user", content: "third question" });
    await client.messages.create({ model: "policy", max_tokens: 200, system, messages });
    // Keep the task and the latest answer; the turns in between become a summary.
    const compacted: Anthropic.MessageParam[] = [
      { role: "user", content: "first question" },
      { role: "user", content: "Summary of the earlier turns: two questions were answered." },
      { role: "assistant", content: r2.content },
      { role: "user", content: "fourth" },
    ];
    await client.messages.create({ model: "policy", max_tokens: 200, system, messages: compacted });
    const records = p.calls(sessionId);
    expect(records[2]?.break).toBeNull();
    expect(records[3]?.break).toMatchObject({ kind: "compaction", fromCallId: records[2]?.callId });
    expectRenderedFromRequest(p, records[3]);
  });

  it("edited history (Chat Completions): an earlier assistant answer was changed", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.openai(apiKey);
    const r1 = await client.chat.completions.create({ model: "policy", messages: [{ role: "user", content: "hello" }] });
    const edited = `${r1.choices[0]?.message.content ?? ""} (edited)`;
    await client.chat.completions.create({ model: "policy", messages: [{ role: "user", content: "hello" }, { role: "assistant", content: edited }, { role: "user", content: "next" }] });
    const records = p.calls(sessionId);
    expect(records[1]?.break).toMatchObject({ kind: "edited_history", fromCallId: records[0]?.callId });
    expect(records[1]?.reusedPrefixTokens).toBe(0);
    expectRenderedFromRequest(p, records[1]);
  });

  it("stripped reasoning (Anthropic): the thinking block was not sent back", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.anthropic(apiKey);
    const r1 = await client.messages.create({ model: "policy", max_tokens: 300, messages: [{ role: "user", content: "think" }] });
    const withoutThinking = r1.content.filter((b) => b.type !== "thinking");
    await client.messages.create({
      model: "policy",
      max_tokens: 300,
      messages: [{ role: "user", content: "think" }, { role: "assistant", content: withoutThinking }, { role: "user", content: "and?" }],
    });
    const records = p.calls(sessionId);
    expect(records[1]?.break).toMatchObject({ kind: "stripped_reasoning", fromCallId: records[0]?.callId });
    expectRenderedFromRequest(p, records[1]);
  });

  it("re-serialised tool arguments (Chat Completions): the same JSON value as other text keeps the sampled tokens", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.openai(apiKey);
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "user", content: "weather?" }];
    const r1 = await client.chat.completions.create({ model: "policy", messages, tools: chatTools });
    const call = r1.choices[0]?.message.tool_calls?.[0];
    if (call?.type !== "function") throw new Error("expected a function call");
    const reserialised = JSON.stringify(JSON.parse(call.function.arguments), null, 2);
    expect(reserialised).not.toBe(call.function.arguments);
    messages.push({ role: "assistant", content: null, tool_calls: [{ ...call, function: { ...call.function, arguments: reserialised } }] });
    messages.push({ role: "tool", tool_call_id: call.id, content: "sunny" });
    await client.chat.completions.create({ model: "policy", messages, tools: chatTools });
    const records = p.calls(sessionId);
    expect(records[1]?.break).toBeNull();
    expect(records[1]?.parentCallId).toBe(records[0]?.callId);
    expect(records[1]?.realigned).toEqual([{ messageIndex: 1, kind: "reserialized_tool_args", fromCallId: records[0]?.callId }]);
    const r0 = records[0]!;
    expect(records[1]?.promptTokens.slice(0, records[1]?.reusedPrefixTokens)).toEqual([...r0.promptTokens, ...r0.completionTokens]);
  });

  it("a harness that leaves history alone gets no break (Responses, three turns)", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.openai(apiKey);
    const input: OpenAI.Responses.ResponseInputItem[] = [{ role: "user", content: "one" }];
    for (const next of ["two", "three"]) {
      const r = await client.responses.create({ model: "policy", input });
      input.push(...(r.output as OpenAI.Responses.ResponseInputItem[]), { role: "user", content: next });
    }
    await client.responses.create({ model: "policy", input });
    expect(p.calls(sessionId).map((r) => r.break)).toEqual([null, null, null]);
  });
});
