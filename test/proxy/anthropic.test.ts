import type Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProxy, expectTokenExactChain, weatherAgent, WEATHER_TOOL_SCHEMA, type TestProxy } from "./helpers.js";

type Param = Anthropic.MessageParam;
const tools: Anthropic.Tool[] = [{ name: "get_weather", description: "Weather for a city", input_schema: WEATHER_TOOL_SCHEMA as Anthropic.Tool.InputSchema }];

describe("proxy: Anthropic Messages through the official @anthropic-ai/sdk client", () => {
  let p: TestProxy;
  beforeAll(async () => {
    p = await startProxy(weatherAgent, { proxy: { modelAliases: ["my-claude", "my-claude-small"] } });
  });
  afterAll(async () => p.close());

  it("answers a non-streamed request with system blocks (cache_control ignored), via x-api-key", async () => {
    const { sessionId, apiKey } = p.session();
    const r = await p.anthropic(apiKey).messages.create({
      model: "my-claude",
      max_tokens: 1000,
      system: [{ type: "text", text: "You are helpful.", cache_control: { type: "ephemeral" } }],
      messages: [{ role: "user", content: "hello" }],
    });
    expect(r.type).toBe("message");
    expect(r.model).toBe("my-claude");
    expect(r.content).toEqual([{ type: "text", text: "Echo: hello — ünïcødé ✓ 日本語 🎉" }]);
    expect(r.stop_reason).toBe("end_turn");
    const [rec] = p.calls(sessionId);
    expect(rec?.protocol).toBe("anthropic-messages");
    expect(rec?.messages[0]).toEqual({ role: "system", content: "You are helpful." });
    expect(r.usage.input_tokens).toBe(rec?.promptTokens.length);
    expect(r.usage.output_tokens).toBe(rec?.completionTokens.length);
  });

  it("streams text deltas (bearer auth) and the SDK's MessageStream assembles the message", async () => {
    const { apiKey } = p.session();
    const stream = p.anthropic(apiKey, true).messages.stream({ model: "my-claude-small", max_tokens: 500, messages: [{ role: "user", content: "stream it" }] });
    const deltas: string[] = [];
    stream.on("text", (d) => deltas.push(d));
    const final = await stream.finalMessage();
    expect(deltas.join("")).toBe("Echo: stream it — ünïcødé ✓ 日本語 🎉");
    expect(deltas.length).toBeGreaterThan(10);
    expect(final.content).toEqual([{ type: "text", text: deltas.join("") }]);
    expect(final.stop_reason).toBe("end_turn");
    expect(final.usage.output_tokens).toBeGreaterThan(0);
  });

  it("runs a tool session with parallel tool_use blocks and tool_result blocks (string and text-block content) token-exactly", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.anthropic(apiKey);
    const messages: Param[] = [{ role: "user", content: [{ type: "text", text: "parallel weather" }] }];
    const r1 = await client.messages.stream({ model: "policy", max_tokens: 800, tools, messages }).finalMessage();
    expect(r1.stop_reason).toBe("tool_use");
    const uses = r1.content.filter((b): b is Anthropic.ToolUseBlock => b.type === "tool_use");
    expect(uses.map((u) => u.input)).toEqual([{ city: "Paris" }, { city: "Tokyo", unit: "C" }]);
    expect(uses[0]?.id).toMatch(/^toolu_/);
    expect(r1.content[0]).toEqual({ type: "text", text: "Checking both cities." });
    messages.push({ role: "assistant", content: r1.content });
    messages.push({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: uses[0]?.id ?? "", content: "rain" },
        { type: "tool_result", tool_use_id: uses[1]?.id ?? "", content: [{ type: "text", text: "snow" }] },
      ],
    });
    const r2 = await client.messages.create({ model: "policy", max_tokens: 800, tools, messages });
    expect(r2.content).toEqual([{ type: "text", text: "Results: rain | snow" }]);
    messages.push({ role: "assistant", content: r2.content }, { role: "user", content: "what is the weather now" });
    const r3 = await client.messages.stream({ model: "policy", max_tokens: 800, tools, messages }).finalMessage();
    expect(r3.content.map((b) => b.type)).toEqual(["tool_use"]);
    const records = p.calls(sessionId);
    expect(records.map((r) => r.messages.map((m) => m.role))).toEqual([["user"], ["user", "assistant", "tool", "tool"], ["user", "assistant", "tool", "tool", "assistant", "user"]]);
    expectTokenExactChain(records);
  });

  it("streams thinking blocks with a signature and reads them back token-exactly", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.anthropic(apiKey);
    const messages: Param[] = [{ role: "user", content: "think" }];
    const r1 = await client.messages.stream({ model: "policy", max_tokens: 800, messages }).finalMessage();
    expect(r1.content.map((b) => b.type)).toEqual(["thinking", "text"]);
    const thinking = r1.content[0] as Anthropic.ThinkingBlock;
    expect(thinking.thinking).toBe("The user wants me to think. 2+2=4.");
    expect(thinking.signature.length).toBeGreaterThan(10);
    messages.push({ role: "assistant", content: r1.content }, { role: "user", content: "ok" });
    await client.messages.create({ model: "policy", max_tokens: 800, messages });
    expectTokenExactChain(p.calls(sessionId));
  });

  it("counts tokens exactly as the prompt would be rendered", async () => {
    const { sessionId, apiKey } = p.session();
    const client = p.anthropic(apiKey);
    const body = { model: "policy", messages: [{ role: "user" as const, content: "count me" }], tools };
    const counted = await client.messages.countTokens(body);
    await client.messages.create({ ...body, max_tokens: 100 });
    expect(counted.input_tokens).toBe(p.calls(sessionId)[0]?.promptTokens.length);
  });

  it("lists the served model and its aliases to the Anthropic client", async () => {
    const { apiKey } = p.session();
    const ids: string[] = [];
    for await (const m of p.anthropic(apiKey).models.list()) ids.push(m.id);
    expect(ids).toEqual(["policy", "my-claude", "my-claude-small"]);
  });

  it("records Claude Code's session header as the agent id, and the harnessrl agent headers", async () => {
    const { sessionId, apiKey } = p.session();
    await p.anthropic(apiKey).messages.create(
      { model: "policy", max_tokens: 50, messages: [{ role: "user", content: "hi" }] },
      { headers: { "x-claude-code-session-id": "cc-123", "x-harnessrl-agent-role": "subagent", "x-harnessrl-parent-call": "call_parent" } },
    );
    // A request naming its spawning call belongs to a sub-agent: it is recorded in a child session of its own.
    expect(p.calls(sessionId)).toEqual([]);
    const [rec] = p.calls(`${sessionId}~call_parent`);
    expect(rec?.agentId).toBe("cc-123");
    expect(rec?.agentRole).toBe("subagent");
    expect(rec?.spawnedByCallId).toBe("call_parent");
    expect(rec?.harness).toBe("test");
    expect(rec?.rolloutId).toBe("r1");
  });
});
