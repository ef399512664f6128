import { APIError as AnthropicAPIError } from "@anthropic-ai/sdk";
import { APIError as OpenAIAPIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProxy, weatherAgent, type TestProxy } from "./helpers.js";

async function admin(p: TestProxy, method: string, path: string, token: string | null, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const r = await fetch(`${p.urls.anthropic}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
}

describe("proxy sessions: issued credentials, isolation, admin API", () => {
  let p: TestProxy;
  beforeAll(async () => {
    p = await startProxy(weatherAgent, { engine: { tokenDelayMs: 0 } });
  });
  afterAll(async () => p.close());

  it("rejects an unknown credential with 401 in each protocol's shape and writes nothing", async () => {
    const before = p.store.countCalls();
    const e1 = await p.openai("hrl-not-issued").chat.completions.create({ model: "policy", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(OpenAIAPIError);
    expect((e1 as OpenAIAPIError).status).toBe(401);
    expect((e1 as OpenAIAPIError).code).toBe("unauthorized");
    const e2 = await p.anthropic("hrl-not-issued").messages.create({ model: "policy", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(AnthropicAPIError);
    expect((e2 as AnthropicAPIError).status).toBe(401);
    expect((e2 as AnthropicAPIError).error).toMatchObject({ type: "error", error: { type: "authentication_error" } });
    const e3 = await p.openai("hrl-not-issued").responses.create({ model: "policy", input: "hi", stream: true }).catch((e: unknown) => e);
    expect((e3 as OpenAIAPIError).status).toBe(401);
    const raw = await fetch(`${p.urls.openai}/chat/completions`, { method: "POST", body: "{}" });
    expect(raw.status).toBe(401);
    expect(p.store.countCalls()).toBe(before);
    expect(p.store.getSession("hrl-not-issued")).toBeNull();
  });

  it("keeps sessions apart: the same conversation in two sessions gives two roots, attributed by credential", async () => {
    const a = p.session();
    const b = p.session();
    for (const s of [a, b]) await p.openai(s.apiKey).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "same" }] });
    const ra = p.calls(a.sessionId);
    const rb = p.calls(b.sessionId);
    expect(ra).toHaveLength(1);
    expect(rb).toHaveLength(1);
    expect(rb[0]?.parentCallId).toBeNull();
    expect(ra[0]?.callId).not.toBe(rb[0]?.callId);
  });

  it("issues sessions over the admin API, which session credentials cannot use", async () => {
    const issued = await admin(p, "POST", "/admin/sessions", p.server.adminToken, { rolloutId: "roll-7", harness: "codex", agentRole: "main", metadata: { task: "t1" } });
    expect(issued.status).toBe(201);
    const apiKey = issued.json.apiKey as string;
    const sessionId = issued.json.sessionId as string;
    await p.openai(apiKey).responses.create({ model: "policy", input: "hi" });
    const status = await admin(p, "GET", `/admin/sessions/${sessionId}`, p.server.adminToken);
    expect(status.status).toBe(200);
    expect(status.json).toMatchObject({ inFlight: 0, records: 1, session: { rolloutId: "roll-7", harness: "codex", agentRole: "main", metadata: { task: "t1" } } });
    const rollout = await admin(p, "GET", "/admin/rollouts/roll-7", p.server.adminToken);
    expect(rollout.json).toMatchObject({ sessions: [sessionId], inFlight: 0, records: 1 });
    expect((await admin(p, "POST", "/admin/sessions", apiKey, {})).status).toBe(401);
    expect((await admin(p, "POST", "/admin/sessions", null, {})).status).toBe(401);
    expect((await admin(p, "POST", "/admin/sessions", p.server.adminToken, { rolloutId: 5 })).status).toBe(400);
    expect((await admin(p, "GET", "/admin/sessions/ses_missing", p.server.adminToken)).status).toBe(404);
    expect(p.calls(sessionId)[0]).toMatchObject({ rolloutId: "roll-7", harness: "codex", agentRole: "main" });
  });

  it("counts calls in flight while the engine is still sampling", async () => {
    const slow = await startProxy(weatherAgent, { engine: { tokenDelayMs: 5 } });
    try {
      const { sessionId, apiKey } = slow.session();
      const pending = slow.openai(apiKey).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "slow one" }] });
      let seen = slow.server.sessionStatus(sessionId);
      for (let i = 0; i < 200 && seen.inFlight === 0; i++) {
        await new Promise((r) => setTimeout(r, 5));
        seen = slow.server.sessionStatus(sessionId);
      }
      expect(seen).toEqual({ inFlight: 1, records: 0 });
      await pending;
      expect(slow.server.sessionStatus(sessionId)).toEqual({ inFlight: 0, records: 1 });
    } finally {
      await slow.close();
    }
  });
});

describe("proxy --open mode", () => {
  it("accepts any credential and uses it as the session id", async () => {
    const p = await startProxy(weatherAgent, { proxy: { open: true } });
    try {
      await p.anthropic("my-own-key").messages.create({ model: "policy", max_tokens: 20, messages: [{ role: "user", content: "hi" }] });
      await p.openai("my-own-key").chat.completions.create({ model: "policy", messages: [{ role: "user", content: "hi" }] });
      expect(p.calls("my-own-key")).toHaveLength(2);
      expect(p.store.getSession("my-own-key")?.metadata).toEqual({ open: true });
      // Issued sessions keep their own key even in open mode: their id is not a credential.
      const issued = p.session();
      const e = await p.openai(issued.sessionId).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "hi" }] }).catch((x: unknown) => x);
      expect((e as { status?: number }).status).toBe(401);
      expect(p.calls(issued.sessionId)).toHaveLength(0);
    } finally {
      await p.close();
    }
  });
});
