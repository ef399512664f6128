import { APIError as AnthropicAPIError } from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineError } from "../../src/core/errors.js";
import { createScriptedEngine } from "../../src/engine/scripted/index.js";
import type { GenerateRequest, GenerateResult, SamplingEngine } from "../../src/engine/types.js";
import { startProxy, weatherAgent, type TestProxy } from "./helpers.js";

/** A model whose connection drops after a few tokens (the engine stand-in; the proxy under test is real). */
function droppingEngine(after: number): SamplingEngine {
  const inner = createScriptedEngine(weatherAgent, { modelId: "policy" });
  return {
    spec: "test:dropping",
    model: inner.model,
    tokenizer: inner.tokenizer,
    renderer: inner.renderer,
    policyVersion: 0,
    close: () => inner.close(),
    generate(req: GenerateRequest): Promise<GenerateResult> {
      let n = 0;
      return inner.generate({
        ...req,
        onToken: (id, lp) => {
          req.onToken?.(id, lp);
          if (++n === after) throw new EngineError("engine_stream_broken", "the engine connection dropped", { retryable: true });
        },
      });
    },
  };
}

describe("proxy streams: failures after the first byte, and clients that leave", () => {
  let slow: TestProxy;
  beforeAll(async () => {
    slow = await startProxy(weatherAgent, { engine: { tokenDelayMs: 10 } });
  });
  afterAll(async () => slow.close());

  it("streams each token as it is sampled, not after the engine is done (Responses)", async () => {
    const { apiKey } = slow.session();
    const stream = slow.openai(apiKey).responses.stream({ model: "policy", input: "hello" });
    const arrivals: number[] = [];
    for await (const ev of stream) if (ev.type === "response.output_text.delta") arrivals.push(performance.now());
    // ~45 tokens at 10 ms each: deltas arrive spread over the generation, one by one.
    expect(arrivals.length).toBeGreaterThan(20);
    expect((arrivals.at(-1) ?? 0) - (arrivals[0] ?? 0)).toBeGreaterThan(200);
  });

  it("an engine failure mid-stream ends the stream with an error event the SDK raises, and is recorded", async () => {
    const p = await startProxy(weatherAgent, { engineOverride: droppingEngine(8) });
    try {
      const { sessionId, apiKey } = p.session();
      const stream = p.anthropic(apiKey).messages.stream({ model: "policy", max_tokens: 100, messages: [{ role: "user", content: "hello there" }] });
      const texts: string[] = [];
      stream.on("text", (t) => texts.push(t));
      const err = await stream.finalMessage().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AnthropicAPIError);
      expect((err as AnthropicAPIError).error).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
      expect(texts.join("")).toBe("Echo: he"); // the 8 tokens sampled before the drop
      const [rec] = p.calls(sessionId);
      expect(rec).toMatchObject({ status: "error", error: { code: "engine_stream_broken", fault: "engine" } });
    } finally {
      await p.close();
    }
  });

  it("a client that disconnects mid-stream aborts generation; the call is recorded as client_closed", async () => {
    const { sessionId, apiKey } = slow.session();
    const stream = slow.openai(apiKey).chat.completions.stream({ model: "policy", messages: [{ role: "user", content: "a long answer please" }] });
    let chunks = 0;
    for await (const _ of stream) {
      if (++chunks === 3) break; // leaving the loop aborts the request
    }
    let rec = slow.calls(sessionId)[0];
    for (let i = 0; i < 200 && !rec; i++) {
      await new Promise((r) => setTimeout(r, 10));
      rec = slow.calls(sessionId)[0];
    }
    expect(rec).toMatchObject({ status: "error", finishReason: "abort", error: { code: "client_closed" } });
    const full = "Echo: a long answer please — ünïcødé ✓ 日本語 🎉<|im_end|>";
    expect(rec?.completionTokens.length).toBeLessThan(slow.engine.tokenizer.encode(full).length);
    expect(slow.server.sessionStatus(sessionId).inFlight).toBe(0);
  });
});
