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

  it("unknown models → 404 in protocol shape", async () => {
    const e1 = await p.openai(key).chat.completions.create({ model: "gpt-9", messages: [{ role: "user", content: "hi" }] }).catch((x: unknown) => x);
    expect((e1 as OpenAIAPIError).status).toBe(404);
    expect((e1 as OpenAIAPIError).code).toBe("model_not_found");
    const e2 = await p.anthropic(key).messages.create({ model: "claude-x", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }).catch((x: unknown) => x);
    expect((e2 as AnthropicAPIError).status).toBe(404);
    expect((e2 as AnthropicAPIError).error).toMatchObject({ error: { type: "not_found_error" } });
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
