import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EngineError, UserError } from "../../src/core/errors.js";
import { createEngine } from "../../src/engine/index.js";
import { isHotSwappable, DEFAULT_SAMPLING } from "../../src/engine/types.js";
import { TINY_VOCAB } from "../../src/weights/random-model.js";
import { runEngineContract } from "./engine-contract.js";
import { startFakeServer, type FakeServer } from "./fake-inference-servers.js";
import { adapterVersionDir } from "./lora-adapters-fixture.js";
import { expectPaddedRowsBiased, writeRemoteModelDir } from "./padded-rows.js";

// No GPU server runs here: a local HTTP server reproduces vLLM's documented /v1/completions shapes.
const root = mkdtempSync(join(tmpdir(), "harnessrl-vllm-"));
const modelDir = join(root, "model");
writeRemoteModelDir(modelDir);
const stopIds = [258, 256];
let server: FakeServer;
let legacy: FakeServer;
beforeAll(async () => {
  server = await startFakeServer("vllm", { vocabSize: TINY_VOCAB, stopIds });
  legacy = await startFakeServer("vllm", { vocabSize: TINY_VOCAB, stopIds, legacyVllm: true });
});
afterAll(async () => {
  await server.close();
  await legacy.close();
  rmSync(root, { recursive: true, force: true });
});

runEngineContract({
  name: "vllm (local server with vLLM's response shapes)",
  create: () => createEngine(`vllm:${server.url}?model_dir=${modelDir}&model=policy&reload_url=${server.url}/reload`),
  swapTo: () => Promise.resolve({ modelDir, version: 3 }),
});

runEngineContract({
  name: "vllm, older server without return_token_ids",
  create: () => createEngine(`vllm:${legacy.url}?model_dir=${modelDir}`),
});

describe("vllm adapter", () => {
  const prompt = [257, 117, 10];
  it("sends the prompt as token ids with untruncated sampling, logprobs and token ids requested", async () => {
    const engine = await createEngine(`vllm:${server.url}?model=policy`);
    await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 5, seed: 9, temperature: 0.7 } });
    const body = server.requests.at(-1)?.body;
    expect(body).toMatchObject({ prompt, max_tokens: 5, seed: 9, temperature: 0.7, top_p: 1, top_k: -1, min_p: 0, logprobs: 1, return_token_ids: true, return_tokens_as_token_ids: true, model: "policy", stop_token_ids: engine.tokenizer.stopTokenIds });
    await engine.close();
  });

  it("retries 503, 429 and dropped connections, then succeeds", async () => {
    const engine = await createEngine(`vllm:${server.url}?backoff_ms=1`);
    server.failures.push({ status: 503 }, { status: 429, retryAfter: 0 }, "drop");
    const before = server.requests.length;
    const r = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 4, seed: 1 } });
    expect(r.tokens.length).toBeGreaterThan(0);
    expect(server.requests.length - before).toBe(4);
    await engine.close();
  });

  it("gives up after the configured retries with a retryable EngineError; 400 is final", async () => {
    const engine = await createEngine(`vllm:${server.url}?backoff_ms=1&retries=1`);
    server.failures.push({ status: 500 }, { status: 502 });
    const err = await engine.generate({ promptTokens: prompt, params: DEFAULT_SAMPLING }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err).toMatchObject({ code: "engine_server_error", retryable: true });
    server.failures.push({ status: 400 });
    const before = server.requests.length;
    await expect(engine.generate({ promptTokens: prompt, params: DEFAULT_SAMPLING })).rejects.toMatchObject({ code: "engine_rejected", retryable: false });
    expect(server.requests.length - before).toBe(1);
    await engine.close();
  });

  it("maps connection refused and timeouts to retryable EngineErrors", async () => {
    const dead = await startFakeServer("vllm", { vocabSize: TINY_VOCAB, stopIds });
    const url = dead.url;
    await dead.close();
    const engine = await createEngine(`vllm:${url}?backoff_ms=1&retries=1`);
    await expect(engine.generate({ promptTokens: prompt, params: DEFAULT_SAMPLING })).rejects.toMatchObject({ code: "engine_unreachable", retryable: true });
    const slow = await startFakeServer("vllm", { vocabSize: TINY_VOCAB, stopIds, delayMs: 500 });
    const e2 = await createEngine(`vllm:${slow.url}?timeout_ms=50&retries=0`);
    await expect(e2.generate({ promptTokens: prompt, params: DEFAULT_SAMPLING })).rejects.toMatchObject({ code: "engine_timeout", retryable: true });
    await slow.close();
  });

  it("refuses loadPolicy without a deployment hook, and rejects bad specs", async () => {
    const engine = await createEngine(`vllm:${server.url}`);
    if (!isHotSwappable(engine)) throw new Error("vllm engine should be hot-swappable");
    await expect(engine.loadPolicy(modelDir, 2)).rejects.toBeInstanceOf(UserError);
    expect(engine.policyVersion).toBe(0);
    await expect(createEngine("vllm:not a url")).rejects.toBeInstanceOf(UserError);
    await expect(createEngine(`vllm:${server.url}?bogus=1`)).rejects.toBeInstanceOf(UserError);
  });

  it("records the hook call and stamps results after a swap with the new version", async () => {
    const engine = await createEngine(`vllm:${server.url}?reload_url=${server.url}/reload`);
    if (!isHotSwappable(engine)) throw new Error("not hot-swappable");
    await engine.loadPolicy(modelDir, 11);
    expect(server.reloads.at(-1)).toEqual({ model_path: modelDir, version: 11 });
    const r = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 2 } });
    expect(r.policyVersion).toBe(11);
  });
});

describe("vllm adapter streaming", () => {
  it("streams when onToken is given: same tokens and logprobs as the non-streamed answer for the same seed", async () => {
    for (const s of [server, legacy]) {
      const engine = await createEngine(`vllm:${s.url}`);
      const params = { ...DEFAULT_SAMPLING, maxTokens: 40, seed: 77 };
      const seen: number[] = [];
      const streamed = await engine.generate({ promptTokens: [257, 10], params, onToken: (t) => seen.push(t) });
      expect(s.requests.at(-1)?.body.stream).toBe(true);
      const plain = await engine.generate({ promptTokens: [257, 10], params });
      expect(s.requests.at(-1)?.body.stream).toBe(false);
      expect(streamed).toEqual(plain);
      expect(seen).toEqual(plain.tokens);
      await engine.close();
    }
  });
});

describe("vllm adapter with LoRA policies (?lora=1)", () => {
  it("loads each version's adapter through /v1/load_lora_adapter, names it in requests, keeps the previous one, unloads older ones", async () => {
    const start = adapterVersionDir(root, "lora-v1");
    const engine = await createEngine(`vllm:${server.url}?model_dir=${modelDir}&model=base&lora=1`);
    if (!isHotSwappable(engine)) throw new Error("not hot-swappable");
    const params = { ...DEFAULT_SAMPLING, maxTokens: 2 };
    // The initial directory (the base) has no adapter: requests go to the served base model.
    await engine.generate({ promptTokens: [257, 10], params });
    expect(server.requests.at(-1)?.body.model).toBe("base");
    await engine.loadPolicy(start, 1);
    expect(server.adapters.get("policy-v1")).toBe(join(start, "adapter"));
    const r = await engine.generate({ promptTokens: [257, 10], params });
    expect([server.requests.at(-1)?.body.model, r.policyVersion]).toEqual(["policy-v1", 1]);
    await engine.loadPolicy(adapterVersionDir(root, "lora-v2"), 2);
    await engine.loadPolicy(adapterVersionDir(root, "lora-v3"), 3);
    expect([...server.adapters.keys()]).toEqual(["policy-v2", "policy-v3"]);
    await engine.generate({ promptTokens: [257, 10], params });
    expect(server.requests.at(-1)?.body.model).toBe("policy-v3");
    // A failed load leaves the engine on the version it had.
    server.adapters.set("policy-v4", "taken");
    await expect(engine.loadPolicy(adapterVersionDir(root, "lora-v4"), 4)).rejects.toThrow(/400/);
    expect(engine.policyVersion).toBe(3);
    await engine.close();
  });

  it("loads the adapter of the directory it starts on before the first request", async () => {
    server.adapters.clear();
    // A run resumed at version 5: the engine starts on that version's directory, which holds an adapter.
    const dir = join(root, "lora-start");
    writeRemoteModelDir(dir);
    adapterVersionDir(root, "lora-start");
    const engine = await createEngine(`vllm:${server.url}?model_dir=${dir}&lora=1&version=5`);
    await Promise.all([1, 2].map(() => engine.generate({ promptTokens: [257, 10], params: { ...DEFAULT_SAMPLING, maxTokens: 2 } })));
    expect(server.requests.at(-1)?.body.model).toBe("policy-v5");
    expect(server.requests.filter((r) => r.path === "/v1/load_lora_adapter")).toHaveLength(1 + 4); // once here (+ the test above)
    await engine.close();
  });
});

describe("vllm adapter on a model with padded vocabulary rows", () => {
  it("sends a logit_bias of −100 for every row without text (none for an unpadded model)", () =>
    expectPaddedRowsBiased("vllm", server, root, modelDir, (body) => body.logit_bias as Record<string, number> | undefined));
});
