import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage, Conversation, ToolSpec } from "../../src/chat/types.js";
import { EngineError } from "../../src/core/errors.js";
import { createScriptedEngine, type ScriptFunction } from "../../src/engine/scripted/index.js";
import type { GenerateRequest, GenerateResult, SamplingEngine } from "../../src/engine/types.js";
import type { ProtocolAdapter, Reply } from "../../src/proxy/protocols/index.js";
import { startProxy, weatherAgent, WEATHER_TOOL_SCHEMA, type TestProxy } from "./helpers.js";

/**
 * The shared protocol contract: every API protocol adapter (OpenAI Chat Completions, OpenAI Responses, Anthropic
 * Messages) passes the same cases. A test file describes how each protocol writes a conversation on the wire and
 * how its official SDK is driven (a `ProtocolWire`), then calls `runProtocolContract(wire)`.
 */
export type Body = Record<string, unknown>;

/** The failures every protocol reports, each in its own error shape. */
export type ErrorKind = "invalid_request" | "unauthorized" | "model_not_found" | "engine_failed" | "engine_overloaded";

export interface ProtocolWire {
  adapter: ProtocolAdapter;
  /** The route the protocol is served on, under the proxy's root. */
  route: string;
  /** Writes a normalised conversation as this protocol's request body, the way a harness would send it. */
  request(conversation: Conversation): Body;
  /** What a harness sends next: the request's history plus the (non-streamed) response's assistant turn. */
  appendAnswer(request: Body, response: Body): Body;
  /** Sends through the official SDK: the response body, or the stream as the SDK accumulated it. */
  send(p: TestProxy, apiKey: string, request: Body, stream: boolean): Promise<Body>;
  /** Keys the SDK adds to one of the two shapes only (not part of what the proxy sent). */
  sdkOnlyKeys: readonly string[];
  /** The HTTP status and the exact error body shape for each failure kind. */
  errorStatus: Record<ErrorKind, number>;
  expectErrorBody(body: Body, kind: ErrorKind): void;
}

const weatherTool: ToolSpec = { name: "get_weather", description: "Weather for a city", parameters: WEATHER_TOOL_SCHEMA };
const call = (id: string, args: Record<string, unknown>): { id: string; name: string; arguments: string } => ({ id, name: "get_weather", arguments: JSON.stringify(args) });

/** Conversations every protocol must be able to carry without loss (tool results name their tool, as two protocols derive). */
export const CANONICAL_CONVERSATIONS: Record<string, Conversation> = {
  "a single user message": { messages: [{ role: "user", content: "hello ünïcødé ✓" }], tools: [] },
  "a system prompt and several turns": {
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" },
      { role: "assistant", content: "Hello!" },
      { role: "user", content: "how are you?" },
    ],
    tools: [],
  },
  "parallel tool calls, their results and a follow-up": {
    messages: [
      { role: "system", content: "You are a weather bot." },
      { role: "user", content: "weather in Paris and Tokyo?" },
      { role: "assistant", content: "Checking both.", toolCalls: [call("call_a", { city: "Paris" }), call("call_b", { city: "Tokyo", unit: "C" })] },
      { role: "tool", content: "rain", toolCallId: "call_a", name: "get_weather" },
      { role: "tool", content: "snow", toolCallId: "call_b", name: "get_weather" },
      { role: "assistant", content: "Rain in Paris, snow in Tokyo." },
      { role: "user", content: "thanks" },
    ],
    tools: [weatherTool],
  },
  "reasoning with text, and reasoning with a bare tool call": {
    messages: [
      { role: "user", content: "2+2?" },
      { role: "assistant", content: "4", reasoning: "2+2=4." },
      { role: "user", content: "weather in Oslo?" },
      { role: "assistant", content: "", reasoning: "Need the tool.", toolCalls: [call("call_c", { city: "Oslo" })] },
      { role: "tool", content: "fog", toolCallId: "call_c", name: "get_weather" },
    ],
    tools: [weatherTool],
  },
};

type Turn = { content?: string; reasoning?: string; calls?: Record<string, unknown>[] };
/** Answers the proxy may give (as the parsed completion leaves them), each read back by the next request. */
const REPLIES: Record<string, Turn> = {
  text: { content: "Sunny — 21 °C ✓" },
  "an empty answer": {},
  "one tool call": { calls: [{ city: "Paris" }] },
  "text and parallel tool calls": { content: "Checking both.", calls: [{ city: "Paris" }, { city: "Tokyo", unit: "C" }] },
  "reasoning and text": { reasoning: "The user wants 4.", content: "4" },
  "reasoning and a tool call": { reasoning: "Need the tool.", calls: [{ city: "Oslo" }] },
};

function replyOf(adapter: ProtocolAdapter, turn: Turn): Reply {
  const toolCalls = (turn.calls ?? []).map((input) => ({ id: adapter.newToolCallId(), name: "get_weather", arguments: JSON.stringify(input), input }));
  return {
    id: adapter.newResponseId(),
    created: 1_700_000_000,
    model: "policy",
    content: turn.content ?? "",
    reasoning: turn.reasoning ?? "",
    toolCalls,
    stopReason: toolCalls.length > 0 ? "tool_calls" : "stop",
    usage: { inputTokens: 17, outputTokens: 9 },
  };
}

/** Keys whose values are fresh per answer (ids, timestamps, signatures): compared by presence, not value. */
const VOLATILE = new Set(["id", "call_id", "created", "created_at", "signature", "encrypted_content"]);

function scrub(value: unknown, drop: ReadonlySet<string>): unknown {
  if (Array.isArray(value)) return value.map((v) => scrub(v, drop));
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (drop.has(k)) continue;
    if (VOLATILE.has(k) && (typeof v === "string" || typeof v === "number")) out[k] = `<${typeof v}>`;
    else out[k] = scrub(v, drop);
  }
  return out;
}

/** The model's stand-in: the weather agent, which fails on request before answering or after a few streamed tokens. */
const failingAgent: ScriptFunction = (req) => {
  const last = req.messages.at(-1)?.content ?? "";
  if (last === "crash") throw new Error("the model process died");
  if (last === "overload") throw new EngineError("engine_overloaded", "all engine slots are busy", { retryable: true });
  return weatherAgent(req);
};

function droppingEngine(): SamplingEngine {
  const inner = createScriptedEngine(failingAgent, { modelId: "policy" });
  return {
    spec: "test:dropping",
    model: inner.model,
    tokenizer: inner.tokenizer,
    renderer: inner.renderer,
    policyVersion: 0,
    close: () => inner.close(),
    generate(req: GenerateRequest): Promise<GenerateResult> {
      const drop = req.context?.messages.at(-1)?.content === "drop after a few tokens";
      let n = 0;
      return inner.generate({
        ...req,
        onToken: (id, lp) => {
          req.onToken?.(id, lp);
          if (drop && ++n === 8) throw new EngineError("engine_stream_broken", "the engine connection dropped", { retryable: true });
        },
      });
    },
  };
}

const user = (content: string, tools: ToolSpec[] = [weatherTool]): Conversation => ({ messages: [{ role: "user", content }], tools });

export function runProtocolContract(wire: ProtocolWire): void {
  const { adapter } = wire;
  describe(`protocol contract: ${adapter.protocol}`, () => {
    let p: TestProxy;
    beforeAll(async () => {
      p = await startProxy(failingAgent, { engineOverride: droppingEngine(), proxy: { strictModels: true } });
    });
    afterAll(async () => p.close());

    for (const [name, conversation] of Object.entries(CANONICAL_CONVERSATIONS)) {
      it(`parses ${name}, written in the protocol, back to the same conversation`, () => {
        const parsed = adapter.parse(wire.request(conversation));
        expect(parsed.conversation.messages).toEqual(conversation.messages);
        expect(parsed.conversation.tools).toEqual(conversation.tools);
      });
    }

    for (const [name, turn] of Object.entries(REPLIES)) {
      it(`reads its own answer (${name}) back in the next request exactly as it echoes it`, () => {
        const request = wire.request(CANONICAL_CONVERSATIONS["a system prompt and several turns"] as Conversation);
        const parsed = adapter.parse(request);
        const reply = replyOf(adapter, turn);
        const next = adapter.parse(wire.appendAnswer(request, adapter.buildResponse(parsed, reply)));
        const echo: ChatMessage = adapter.echoMessage(parsed, reply);
        expect(next.conversation.messages).toEqual([...parsed.conversation.messages, echo]);
      });
    }

    for (const prompt of ["hello", "what is the weather?", "parallel weather please", "think"]) {
      it(`streams the same answer it returns unstreamed, as the official SDK assembles it ("${prompt}")`, async () => {
        const request = wire.request(user(prompt));
        const a = p.session();
        const b = p.session();
        const plain = await wire.send(p, a.apiKey, request, false);
        const streamed = await wire.send(p, b.apiKey, request, true);
        const drop = new Set(wire.sdkOnlyKeys);
        expect(scrub(streamed, drop)).toEqual(scrub(plain, drop));
        // What the proxy records as the answer agrees too (the streamed path reconciles with the final parse).
        const [ra] = p.calls(a.sessionId);
        const [rb] = p.calls(b.sessionId);
        expect(rb?.completionTokens).toEqual(ra?.completionTokens);
        expect(scrub(rb?.response, drop)).toEqual(scrub(ra?.response, drop));
        expect(scrub(rb?.rawResponse, drop)).toEqual(scrub(ra?.rawResponse, drop));
      });
    }

    async function post(apiKey: string, body: Body): Promise<{ status: number; json: Body }> {
      const r = await fetch(`${p.urls.anthropic}${wire.route}`, { method: "POST", headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" }, body: JSON.stringify(body) });
      return { status: r.status, json: (await r.json()) as Body };
    }

    const failures: [ErrorKind, (apiKey: string) => [string, Body]][] = [
      ["invalid_request", (k) => [k, { ...wire.request(user("hello")), model: 42 }]],
      ["unauthorized", () => ["not-a-session-key", wire.request(user("hello"))]],
      ["model_not_found", (k) => [k, { ...wire.request(user("hello")), model: "gpt-9" }]],
      ["engine_failed", (k) => [k, wire.request(user("crash"))]],
      ["engine_overloaded", (k) => [k, wire.request(user("overload"))]],
    ];
    for (const [kind, make] of failures) {
      it(`reports ${kind} with the protocol's status and error shape, raised by its SDK`, async () => {
        const [apiKey, body] = make(p.session().apiKey);
        const raw = await post(apiKey, body);
        expect(raw.status).toBe(wire.errorStatus[kind]);
        wire.expectErrorBody(raw.json, kind);
        for (const stream of [false, true]) {
          const e = await wire.send(p, apiKey, body, stream).then(
            () => null,
            (x: unknown) => x as { status?: number },
          );
          expect(e?.status, `stream: ${stream}`).toBe(wire.errorStatus[kind]);
        }
      });
    }

    it("ends a stream that fails after the first byte with the protocol's failure event, and records the failure", async () => {
      const { sessionId, apiKey } = p.session();
      const e = await wire.send(p, apiKey, wire.request(user("drop after a few tokens")), true).then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(Error);
      expect((e as Error).message).toMatch(/engine connection dropped/);
      const [rec] = p.calls(sessionId);
      expect(rec).toMatchObject({ status: "error", error: { code: "engine_stream_broken", fault: "engine" } });
    });
  });
}
