import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProxy, expectTokenExactChain, type TestProxy } from "./helpers.js";
import type { ScriptFunction } from "../../src/engine/scripted/index.js";

/** Reads an SSE body into (event, data) pairs. */
async function sse(r: Response): Promise<{ event: string | null; data: string }[]> {
  const text = await r.text();
  return text
    .split("\n\n")
    .filter((b) => b.trim() !== "")
    .map((block) => {
      const lines = block.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? null;
      const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      return { event, data };
    });
}

const agent: ScriptFunction = (req) => {
  const last = req.messages.at(-1);
  if (last?.role === "tool") return { content: "The listing shows two files." };
  return { reasoning: "I should list the files.", content: "Listing files.", toolCalls: [{ name: req.tools[0]?.name ?? "Bash", arguments: { command: "ls" } }] };
};

describe("proxy: requests shaped like the real harnesses send them (raw HTTP, as captured)", () => {
  let p: TestProxy;
  beforeAll(async () => {
    p = await startProxy(agent, { proxy: { modelAliases: ["*"] } });
  });
  afterAll(async () => p.close());

  it("Claude Code: ?beta=true, anthropic headers, system blocks + a system message, cache_control everywhere, thinking, metadata", async () => {
    const { sessionId, apiKey } = p.session("claude-code");
    const tools = [{ name: "Bash", description: "Run a command", input_schema: { $schema: "http://json-schema.org/draft-07/schema#", type: "object", properties: { command: { type: "string" } } }, cache_control: { type: "ephemeral" } }];
    const system = [
      { type: "text", text: "x-anthropic-billing-header: cc_version=2.1; cch=abc;" },
      { type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } },
    ];
    const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json", "anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219,interleaved-thinking-2025-05-14", "x-claude-code-session-id": "cc-sess-1", "user-agent": "claude-cli/2.1.332" };
    const messages: unknown[] = [
      { role: "system", content: "<env>cwd: /work</env>" },
      { role: "user", content: [{ type: "text", text: "<system-reminder>be careful</system-reminder>" }, { type: "text", text: "list the files", cache_control: { type: "ephemeral" } }] },
    ];
    const body = (): string => JSON.stringify({ model: "claude-sonnet-x", max_tokens: 32000, stream: true, system, tools, messages, metadata: { user_id: "u" }, thinking: { type: "enabled", budget_tokens: 1024 }, temperature: 1 });
    const r1 = await fetch(`${p.urls.anthropic}/v1/messages?beta=true`, { method: "POST", headers, body: body() });
    expect(r1.status).toBe(200);
    expect(r1.headers.get("content-type")).toContain("text/event-stream");
    const events = await sse(r1);
    expect(events.map((e) => e.event)).toEqual([
      "message_start",
      "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", // thinking + signature
      "content_block_start", ...Array(events.filter((e) => e.data.includes('"text_delta"')).length).fill("content_block_delta"), "content_block_stop",
      "content_block_start", "content_block_delta", "content_block_stop", // tool_use
      "message_delta",
      "message_stop",
    ]);
    const blocks = events.filter((e) => e.event === "content_block_start").map((e) => (JSON.parse(e.data) as { content_block: Record<string, unknown> }).content_block);
    const toolUse = blocks[2] as { id: string; name: string };
    const thinking = events.find((e) => e.data.includes("thinking_delta"));
    const signature = events.find((e) => e.data.includes("signature_delta"));
    // The harness echoes the turn with the moving cache_control marker now on the tool_result (string vs blocks changes).
    messages[1] = { role: "user", content: [{ type: "text", text: "<system-reminder>be careful</system-reminder>" }, { type: "text", text: "list the files" }] };
    messages.push({
      role: "assistant",
      content: [
        { type: "thinking", thinking: (JSON.parse(thinking?.data ?? "{}") as { delta: { thinking: string } }).delta.thinking, signature: (JSON.parse(signature?.data ?? "{}") as { delta: { signature: string } }).delta.signature },
        { type: "text", text: "Listing files." },
        { type: "tool_use", id: toolUse.id, name: toolUse.name, input: { command: "ls" } },
      ],
    });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: toolUse.id, content: [{ type: "text", text: "a.txt b.txt" }], cache_control: { type: "ephemeral" } }] });
    const r2 = await fetch(`${p.urls.anthropic}/v1/messages?beta=true`, { method: "POST", headers, body: body() });
    expect(r2.status).toBe(200);
    const text = (await sse(r2))
      .filter((e) => e.data.includes('"text_delta"'))
      .map((e) => (JSON.parse(e.data) as { delta: { text: string } }).delta.text)
      .join("");
    expect(text).toBe("The listing shows two files.");
    const records = p.calls(sessionId);
    expect(records.map((r) => r.agentId)).toEqual(["cc-sess-1", "cc-sess-1"]);
    expect(records[0]?.harness).toBe("claude-code");
    expect(records[0]?.messages.slice(0, 3).map((m) => m.role)).toEqual(["system", "system", "user"]);
    expectTokenExactChain(records);
  });

  it("Codex: stateless Responses with store:false, encrypted reasoning, function + custom + hosted tools, prompt_cache_key", async () => {
    const { sessionId, apiKey } = p.session("codex");
    const tools = [
      { type: "function", name: "exec_command", description: "run", strict: false, parameters: { type: "object", properties: { command: { type: "string" } } } },
      { type: "custom", name: "apply_patch", description: "patch", format: { type: "grammar", syntax: "lark", definition: "start: /.+/" } },
      { type: "web_search" },
    ];
    const input: unknown[] = [
      { type: "message", role: "developer", content: [{ type: "input_text", text: "<permissions instructions>" }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "<environment_context>cwd</environment_context>" }] },
      { type: "message", role: "user", content: [{ type: "input_text", text: "list the files" }] },
    ];
    const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json", originator: "codex_exec", session_id: "s1" };
    const body = (): string =>
      JSON.stringify({ model: "gpt-5-codex", instructions: "You are Codex.", input, tools, tool_choice: "auto", parallel_tool_calls: false, reasoning: { effort: "medium", summary: "auto" }, store: false, stream: true, include: ["reasoning.encrypted_content"], prompt_cache_key: "k" });
    const r1 = await fetch(`${p.urls.openai}/responses`, { method: "POST", headers, body: body() });
    expect(r1.status).toBe(200);
    const events = await sse(r1);
    const done = events.filter((e) => e.event === "response.output_item.done").map((e) => (JSON.parse(e.data) as { item: Record<string, unknown> }).item);
    expect(done.map((i) => i.type)).toEqual(["reasoning", "message", "function_call"]);
    expect(events.at(-1)?.event).toBe("response.completed");
    // Codex sends back the items it got (reasoning with only encrypted_content kept), then the call output.
    const [reasoning, message, call] = done as [Record<string, unknown>, Record<string, unknown>, Record<string, unknown>];
    input.push({ type: "reasoning", id: reasoning.id, summary: [], content: null, encrypted_content: reasoning.encrypted_content });
    input.push({ type: "message", role: "assistant", id: message.id, content: message.content });
    input.push({ type: "function_call", id: call.id, call_id: call.call_id, name: call.name, arguments: call.arguments });
    input.push({ type: "function_call_output", call_id: call.call_id, output: "a.txt\nb.txt" });
    const r2 = await fetch(`${p.urls.openai}/responses`, { method: "POST", headers, body: body() });
    expect((await sse(r2)).some((e) => e.data.includes("two files"))).toBe(true);
    const records = p.calls(sessionId);
    expect(records[0]?.tools.map((t) => t.name)).toEqual(["exec_command", "apply_patch"]);
    expectTokenExactChain(records);
  });
});
