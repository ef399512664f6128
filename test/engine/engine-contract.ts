import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage } from "../../src/chat/types.js";
import { DEFAULT_SAMPLING, isHotSwappable, type GenerateContext, type GenerateRequest, type GenerateResult, type SamplingEngine, type SamplingParams } from "../../src/engine/types.js";

/**
 * The shared engine contract: every SamplingEngine adapter (scripted, oracle, llamacpp, vllm, sglang) runs these same checks
 * against a real instance. Call it inside a test file: `runEngineContract({ name, create })`.
 */
export interface EngineContractOptions {
  name: string;
  create: () => Promise<SamplingEngine>;
  /** Engines that sample (not scripted replay): same seed ⇒ same output, different seeds ⇒ (usually) different outputs. */
  sampling?: boolean;
  /** For hot-swappable engines: a model dir to swap to (same tokenizer) and the version to stamp. */
  swapTo?: () => Promise<{ modelDir: string; version: number }>;
  /** maxTokens that makes the engine emit a stop token with near certainty (default 4000). */
  longMaxTokens?: number;
  /** Per-test timeout (ms). */
  timeoutMs?: number;
  /**
   * For engines that answer from the call's context rather than bare tokens (the oracle needs the rollout): the
   * context sent with every request, given the conversation the prompt was rendered from.
   */
  context?: (messages: readonly ChatMessage[]) => GenerateContext;
}

const params = (over: Partial<SamplingParams>): SamplingParams => ({ ...DEFAULT_SAMPLING, ...over });

function expectWellFormed(r: GenerateResult, engine: SamplingEngine): void {
  expect(r.tokens.length).toBe(r.logprobs.length);
  for (const lp of r.logprobs) {
    expect(Number.isFinite(lp)).toBe(true);
    expect(lp).toBeLessThanOrEqual(0);
  }
  for (const t of r.tokens) {
    expect(Number.isInteger(t)).toBe(true);
    expect(t).toBeGreaterThanOrEqual(0);
    expect(t).toBeLessThan(engine.tokenizer.vocabSize);
  }
  expect(["stop", "length", "abort"]).toContain(r.finishReason);
  expect(Number.isInteger(r.policyVersion)).toBe(true);
}

export function runEngineContract(o: EngineContractOptions): void {
  const timeout = o.timeoutMs ?? 60_000;
  const sampling = o.sampling ?? true;
  const conversation: ChatMessage[] = [{ role: "user", content: "Say hello." }];
  describe(`engine contract: ${o.name}`, () => {
    let engine: SamplingEngine;
    let prompt: number[];
    /** Every request goes through here, so that context-driven engines get their context. */
    const generate = (target: SamplingEngine, request: GenerateRequest): Promise<GenerateResult> =>
      target.generate(o.context ? { context: o.context(conversation), ...request } : request);
    beforeAll(async () => {
      engine = await o.create();
      const text = engine.renderer.render(conversation, [], { addGenerationPrompt: true });
      prompt = engine.tokenizer.encode(text);
    }, timeout);
    afterAll(async () => {
      await engine.close();
    });

    it("round-trips text through its tokenizer, special tokens included", () => {
      const text = "hello <|im_start|>user\nwörld ✓<|im_end|>";
      const ids = engine.tokenizer.encode(text);
      expect(engine.tokenizer.decode(ids)).toBe(text);
      for (const id of engine.tokenizer.stopTokenIds) expect(id).toBeLessThan(engine.tokenizer.vocabSize);
      expect(engine.tokenizer.stopTokenIds.length).toBeGreaterThan(0);
    });

    it("renders a conversation with a generation prompt", () => {
      const text = engine.renderer.render([{ role: "user", content: "Say hello." }], [], { addGenerationPrompt: true });
      expect(text).toContain("Say hello.");
      expect(engine.renderer.endOfTurn.length).toBeGreaterThan(0);
      expect(prompt.length).toBeGreaterThan(0);
      expect(engine.model.id.length).toBeGreaterThan(0);
      expect(engine.model.contextWindow).toBeGreaterThan(prompt.length);
    });

    it("generates tokens with one finite logprob ≤ 0 each, stamped with the engine's policy version", async () => {
      const r = await generate(engine, { promptTokens: prompt, params: params({ maxTokens: 16, seed: 1 }) });
      expectWellFormed(r, engine);
      expect(r.tokens.length).toBeGreaterThan(0);
      expect(r.policyVersion).toBe(engine.policyVersion);
    }, timeout);

    it("stops at maxTokens with finishReason 'length'", async () => {
      let r: GenerateResult | undefined;
      for (let seed = 0; seed < 20; seed++) {
        r = await generate(engine, { promptTokens: prompt, params: params({ maxTokens: 3, seed }) });
        expectWellFormed(r, engine);
        expect(r.tokens.length).toBeLessThanOrEqual(3);
        if (r.finishReason === "length") break;
      }
      expect(r?.finishReason).toBe("length");
      expect(r?.tokens.length).toBe(3);
    }, timeout);

    it("stops on a stop token with finishReason 'stop' and includes the stop token", async () => {
      const r = await generate(engine, { promptTokens: prompt, params: params({ maxTokens: o.longMaxTokens ?? 4000, seed: 3 }) });
      expectWellFormed(r, engine);
      expect(r.finishReason).toBe("stop");
      expect(engine.tokenizer.stopTokenIds).toContain(r.tokens.at(-1));
      expect(r.tokens.slice(0, -1).some((t) => engine.tokenizer.stopTokenIds.includes(t))).toBe(false);
    }, timeout);

    it("reports every token through onToken, in order, with its logprob", async () => {
      const seen: [number, number][] = [];
      const r = await generate(engine, { promptTokens: prompt, params: params({ maxTokens: 12, seed: 4 }), onToken: (t, lp) => seen.push([t, lp]) });
      expect(seen.map((s) => s[0])).toEqual(r.tokens);
      expect(seen.map((s) => s[1])).toEqual(r.logprobs);
    }, timeout);

    it("returns finishReason 'abort' when the signal fires mid-generation or before it starts", async () => {
      const ac = new AbortController();
      const r = await generate(engine, {
        promptTokens: prompt,
        params: params({ maxTokens: 100_000, seed: 5, temperature: 1 }),
        signal: ac.signal,
        onToken: () => ac.abort(),
      });
      expectWellFormed(r, engine);
      expect(r.finishReason).toBe("abort");
      expect(r.tokens.length).toBeLessThan(1000);
      const pre = new AbortController();
      pre.abort();
      const r2 = await generate(engine, { promptTokens: prompt, params: params({ maxTokens: 50, seed: 6 }), signal: pre.signal });
      expect(r2.finishReason).toBe("abort");
      expect(r2.tokens.length).toBe(r2.logprobs.length);
    }, timeout);

    if (sampling) {
      it("gives the same output for the same seed and different outputs across seeds", async () => {
        const a = await generate(engine, { promptTokens: prompt, params: params({ maxTokens: 24, seed: 1234 }) });
        const b = await generate(engine, { promptTokens: prompt, params: params({ maxTokens: 24, seed: 1234 }) });
        expect(b.tokens).toEqual(a.tokens);
        b.logprobs.forEach((lp, i) => expect(Math.abs(lp - (a.logprobs[i] ?? 0))).toBeLessThan(1e-4));
        const others = await Promise.all([1, 2, 3].map((s) => generate(engine, { promptTokens: prompt, params: params({ maxTokens: 24, seed: 1234 + s }) })));
        expect(others.some((x) => JSON.stringify(x.tokens) !== JSON.stringify(a.tokens))).toBe(true);
      }, timeout);
    }

    it("serves 8 concurrent requests, each well-formed", async () => {
      const rs = await Promise.all(Array.from({ length: 8 }, (_, i) => generate(engine, { promptTokens: [...prompt, ...engine.tokenizer.encode(String(i))], params: params({ maxTokens: 20, seed: 100 + i }) })));
      expect(rs).toHaveLength(8);
      for (const r of rs) {
        expectWellFormed(r, engine);
        expect(r.tokens.length).toBeGreaterThan(0);
        expect(r.policyVersion).toBe(engine.policyVersion);
      }
    }, timeout);

    if (o.swapTo) {
      const swapTo = o.swapTo;
      it("hot-swaps to a new policy version and stamps results with it", async () => {
        if (!isHotSwappable(engine)) throw new Error(`${o.name} declares swapTo but is not hot-swappable`);
        const before = engine.policyVersion;
        const { modelDir, version } = await swapTo();
        expect(version).not.toBe(before);
        await engine.loadPolicy(modelDir, version);
        expect(engine.policyVersion).toBe(version);
        const r = await generate(engine, { promptTokens: prompt, params: params({ maxTokens: 8, seed: 9 }) });
        expectWellFormed(r, engine);
        expect(r.policyVersion).toBe(version);
      }, timeout);
    }

    it("rejects generation after close", async () => {
      const other = await o.create();
      await other.close();
      await expect(generate(other, { promptTokens: prompt, params: params({ maxTokens: 4 }) })).rejects.toThrow();
    }, timeout);
  });
}
