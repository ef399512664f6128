import type { APIError as AnthropicAPIError } from "@anthropic-ai/sdk";
import type { APIError as OpenAIAPIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineError } from "../../src/core/errors.js";
import { startProxy, weatherAgent, type TestProxy } from "./helpers.js";
import type { ScriptFunction } from "../../src/engine/scripted/index.js";

const agent: ScriptFunction = (req) => {
  const last = req.messages.at(-1)?.content ?? "";
  if (last === "crash") throw new Error("the model process died");
  if (last === "overload") throw new EngineError("engine_overloaded", "all engine slots are busy", { retryable: true });
  return weatherAgent(req);
};

async function post(p: TestProxy, path: string, key: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown> }> {
  const r = await fetch(`${p.urls.anthropic}${path}`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers }, body });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
}

describe("proxy: bad input gets a 4xx in the caller's protocol and never crashes the proxy", () => {
  let p: TestProxy;
  let key: string;
  let sessionId: string;
  beforeAll(async () => {
    p = await startProxy(agent, { engine: { contextWindow: 400 }, proxy: { maxBodyBytes: 16 * 1024 } });
    ({ apiKey: key, sessionId } = p.session());
  });
  afterAll(async () => p.close());

  it("malformed JSON → 400 invalid_json in OpenAI and Anthropic shapes", async () => {
    const o = await post(p, "/v1/chat/completions", key, "{not json");
    expect(o.status).toBe(400);
    expect(o.json).toMatchObject({ error: { type: "invalid_request_error", code: "invalid_json" } });
    expect((o.json.error as { message: string }).message).toContain("not valid JSON");
    const a = await post(p, "/v1/messages", key, "[1,");
    expect(a.status).toBe(400);
    expect(a.json).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    const empty = await post(p, "/v1/responses", key, "");
    expect(empty.status).toBe(400);
  });

  it("wrong types and missing fields → 400 naming the field", async () => {
    const o = await post(p, "/v1/chat/completions", key, JSON.stringify({ model: "policy", messages: "hello" }));
    expect(o.status).toBe(400);
    expect((o.json.error as { message: string; param: string }).param).toBe("messages");
    const m = await post(p, "/v1/messages", key, JSON.stringify({ messages: [{ role: "user", content: "x" }] }));
    expect(m.status).toBe(400);
    expect((m.json.error as { message: string }).message).toContain("model");
    const r = await post(p, "/v1/responses", key, JSON.stringify({ model: "policy", input: [{ type: "function_call", name: "x" }] }));
    expect(r.status).toBe(400);
    expect((r.json.error as { message: string }).message).toContain("input[0].call_id");
    const t = await post(p, "/v1/chat/completions", key, JSON.stringify({ model: "policy", messages: [{ role: "tool", content: "x" }] }));
    expect((t.json.error as { message: string }).message).toContain("tool_call_id");
    const n = await post(p, "/v1/chat/completions", key, "null");
    expect(n.status).toBe(400);
  });

  it("oversized bodies → 413", async () => {
    const big = JSON.stringify({ model: "policy", messages: [{ role: "user", content: "x".repeat(20_000) }] });
    const o = await post(p, "/v1/chat/completions", key, big);
    expect(o.status).toBe(413);
    expect(o.json).toMatchObject({ error: { code: "payload_too_large" } });
    const a = await post(p, "/v1/messages", key, big);
    expect(a.status).toBe(413);
    expect(a.json).toMatchObject({ type: "error", error: { type: "request_too_large" } });
  });

  it("prompts longer than the context window → 400 context_length_exceeded", async () => {
    const e = await p.openai(key).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "y".repeat(600) }] }).catch((x: unknown) => x);
    expect((e as OpenAIAPIError).status).toBe(400);
    expect((e as OpenAIAPIError).code).toBe("context_length_exceeded");
    expect((e as OpenAIAPIError).message).toMatch(/context window is 400 tokens/);
    // Refused by the estimate before rendering: request text cannot become special tokens (the renderer is guarded),
    // so each of the 600 bytes costs the byte tokenizer one token.
    expect((e as OpenAIAPIError).message).toMatch(/prompt is at least 600 tokens \(600 bytes of text\)/);
  });

  it("images, audio and files → 400 unsupported_content saying so", async () => {
    const e1 = await p
      .openai(key)
      .chat.completions.create({ model: "policy", messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] }] })
      .catch((x: unknown) => x);
    expect((e1 as OpenAIAPIError).status).toBe(400);
    expect((e1 as OpenAIAPIError).message).toMatch(/image content .* not supported/);
    const e2 = await p
      .anthropic(key)
      .messages.create({ model: "policy", max_tokens: 10, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }] }] })
      .catch((x: unknown) => x);
    expect((e2 as AnthropicAPIError).status).toBe(400);
    expect((e2 as AnthropicAPIError).message).toMatch(/image content/);
    const e3 = await p
      .openai(key)
      .responses.create({ model: "policy", input: [{ role: "user", content: [{ type: "input_file", file_id: "f" }] }] })
      .catch((x: unknown) => x);
    expect((e3 as OpenAIAPIError).message).toMatch(/file content/);
    const e4 = await p
      .openai(key)
      .chat.completions.create({ model: "policy", messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AA", format: "wav" } }] }] })
      .catch((x: unknown) => x);
    expect((e4 as OpenAIAPIError).message).toMatch(/audio content/);
  });

  it("any model name is served by default and echoed back; the record keeps the name asked for", async () => {
    const before = p.calls(sessionId).length;
    const r1 = await p.openai(key).chat.completions.create({ model: "gpt-5.5", messages: [{ role: "user", content: "hi" }] });
    expect(r1.model).toBe("gpt-5.5");
    const r2 = await p.anthropic(key).messages.create({ model: "claude-haiku-x", max_tokens: 5, messages: [{ role: "user", content: "hi" }] });
    expect(r2.model).toBe("claude-haiku-x");
    const asked = p.calls(sessionId).slice(before).map((r) => (r.rawRequest as { model: string }).model);
    expect(asked).toEqual(["gpt-5.5", "claude-haiku-x"]);
  });

  it("with strictModels, unknown models → 404 in protocol shape", async () => {
    const strict = await startProxy(agent, { proxy: { strictModels: true, modelAliases: ["my-alias"] } });
    try {
      const k = strict.session().apiKey;
      const e1 = await strict.openai(k).chat.completions.create({ model: "gpt-9", messages: [{ role: "user", content: "hi" }] }).catch((x: unknown) => x);
      expect((e1 as OpenAIAPIError).status).toBe(404);
      expect((e1 as OpenAIAPIError).code).toBe("model_not_found");
      const e2 = await strict.anthropic(k).messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }).catch((x: unknown) => x);
      expect((e2 as AnthropicAPIError).status).toBe(404);
      expect((e2 as AnthropicAPIError).error).toMatchObject({ error: { type: "not_found_error" } });
      const ok = await strict.openai(k).chat.completions.create({ model: "my-alias", messages: [{ role: "user", content: "hi" }] });
      expect(ok.model).toBe("my-alias");
    } finally {
      await strict.close();
    }
  });

  it("JSON nested 2,500 deep (the body limit here is 16 KiB) in a body, tool parameters or tool-call arguments → 400 json_too_deep, nothing recorded", async () => {
    const before = p.calls(sessionId).length;
    const deep = `${'{"a":'.repeat(2500)}1${"}".repeat(2500)}`;
    // Inside a JSON string every quote is escaped: 1,000 levels keep the body under the limit.
    const deepArgs = `${'{"a":'.repeat(1000)}1${"}".repeat(1000)}`;
    const params = await post(p, "/v1/chat/completions", key, `{"model":"policy","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${deep}}}]}`);
    expect(params.status).toBe(400);
    expect(params.json).toMatchObject({ error: { code: "json_too_deep" } });
    const chatArgs = JSON.stringify({ model: "policy", messages: [{ role: "user", content: "hi" }, { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: deepArgs } }] }, { role: "tool", tool_call_id: "c1", content: "x" }] });
    expect((await post(p, "/v1/chat/completions", key, chatArgs)).json).toMatchObject({ error: { code: "json_too_deep" } });
    const respArgs = JSON.stringify({ model: "policy", input: [{ type: "message", role: "user", content: "hi" }, { type: "function_call", call_id: "c1", name: "f", arguments: deepArgs }, { type: "function_call_output", call_id: "c1", output: "x" }] });
    expect((await post(p, "/v1/responses", key, respArgs)).json).toMatchObject({ error: { code: "json_too_deep" } });
    const anthropicInput = `{"model":"policy","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":${deep}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}`;
    const a = await post(p, "/v1/messages", key, anthropicInput);
    expect(a.status).toBe(400);
    expect(a.json).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(p.calls(sessionId).length).toBe(before);
    // Within the limit, deeply nested but ordinary schemas still work (a proxy with room for the rendered schema).
    const roomy = await startProxy(agent);
    try {
      const ok = `${'{"a":'.repeat(40)}1${"}".repeat(40)}`;
      const fine = await post(roomy, "/v1/chat/completions", roomy.session().apiKey, `{"model":"policy","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","x":${ok}}}}]}`);
      expect(fine.status).toBe(200);
    } finally {
      await roomy.close();
    }
  });

  it("an Anthropic turn with empty content → 400 naming it; a final empty assistant turn (prefill) is allowed", async () => {
    const empty = await post(p, "/v1/messages", key, JSON.stringify({ model: "policy", max_tokens: 10, messages: [{ role: "user", content: [] }] }));
    expect(empty.status).toBe(400);
    expect((empty.json.error as { message: string }).message).toContain("messages[0].content");
    const emptyText = await post(p, "/v1/messages", key, JSON.stringify({ model: "policy", max_tokens: 10, messages: [{ role: "user", content: "" }] }));
    expect(emptyText.status).toBe(400);
    const prefill = await post(p, "/v1/messages", key, JSON.stringify({ model: "policy", max_tokens: 10, messages: [{ role: "user", content: "hi" }, { role: "assistant", content: [] }] }));
    expect(prefill.status).toBe(200);
  });

  it("hosted tools (Codex's tool_search, Anthropic server tools) are left out of the prompt and recorded; strictTools refuses them", async () => {
    const before = p.calls(sessionId).length;
    const r = await p.openai(key).responses.create({
      model: "gpt-5.5",
      input: "hi",
      tools: [{ type: "function", name: "f", parameters: { type: "object", properties: {} }, strict: false }, { type: "web_search" }],
    });
    expect(r.status).toBe("completed");
    const a = await post(p, "/v1/messages", key, JSON.stringify({ model: "policy", max_tokens: 10, messages: [{ role: "user", content: "hi" }], tools: [{ type: "web_search_20250305", name: "web_search" }, { name: "g", input_schema: { type: "object" } }] }));
    expect(a.status).toBe(200);
    const recs = p.calls(sessionId).slice(before);
    expect(recs.map((x) => [x.tools.map((t) => t.name), x.omittedTools])).toEqual([
      [["f"], ["web_search"]],
      [["g"], ["web_search_20250305:web_search"]],
    ]);
    const strict = await startProxy(agent, { proxy: { strictTools: true } });
    try {
      const k = strict.session().apiKey;
      const e = await strict.openai(k).responses.create({ model: "policy", input: "hi", tools: [{ type: "web_search" }] }).catch((x: unknown) => x);
      expect((e as OpenAIAPIError).status).toBe(400);
      expect((e as OpenAIAPIError).message).toMatch(/web_search/);
    } finally {
      await strict.close();
    }
  });

  it("unknown routes and wrong methods → 404 / 405", async () => {
    expect((await post(p, "/v1/embeddings", key, "{}")).status).toBe(404);
    const r = await fetch(`${p.urls.openai}/chat/completions`, { headers: { authorization: `Bearer ${key}` } });
    expect(r.status).toBe(405);
  });

  it("engine failures → 500 (or Anthropic 529 overloaded when retryable), recorded with status error", async () => {
    const before = p.calls(sessionId).length;
    const e1 = await p.openai(key).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "crash" }] }).catch((x: unknown) => x);
    expect((e1 as OpenAIAPIError).status).toBe(500);
    expect((e1 as OpenAIAPIError).type).toBe("server_error");
    const e2 = await p.anthropic(key).messages.create({ model: "policy", max_tokens: 20, messages: [{ role: "user", content: "overload" }] }).catch((x: unknown) => x);
    expect((e2 as AnthropicAPIError).status).toBe(529);
    expect((e2 as AnthropicAPIError).error).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    const e3 = await p.openai(key).responses.create({ model: "policy", input: "overload", stream: true }).catch((x: unknown) => x);
    expect((e3 as OpenAIAPIError).status).toBe(503);
    const records = p.calls(sessionId).slice(before);
    expect(records.map((r) => [r.status, r.error?.code])).toEqual([
      ["error", "scripted_failed"],
      ["error", "engine_overloaded"],
      ["error", "engine_overloaded"],
    ]);
    expect(records[0]?.promptTokens.length).toBeGreaterThan(0);
  });

  it("still answers normally after all of the above", async () => {
    const r = await p.openai(key).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "ok?" }] });
    expect(r.choices[0]?.message.content).toContain("Echo: ok?");
  });
});
