import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEngine } from "../../src/engine/index.js";
import { isHotSwappable, DEFAULT_SAMPLING } from "../../src/engine/types.js";
import { TINY_VOCAB } from "../../src/weights/random-model.js";
import { runEngineContract } from "./engine-contract.js";
import { startFakeServer, type FakeServer } from "./fake-inference-servers.js";
import { adapterVersionDir } from "./lora-adapters-fixture.js";
import { expectPaddedRowsBiased, writeRemoteModelDir } from "./padded-rows.js";

// No GPU server runs here: a local HTTP server reproduces SGLang's documented /generate and
// /update_weights_from_disk shapes.
const root = mkdtempSync(join(tmpdir(), "harnessrl-sglang-"));
const modelDir = join(root, "model");
writeRemoteModelDir(modelDir);
let server: FakeServer;
beforeAll(async () => {
  server = await startFakeServer("sglang", { vocabSize: TINY_VOCAB, stopIds: [258, 256] });
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

runEngineContract({
  name: "sglang (local server with SGLang's response shapes)",
  create: () => createEngine(`sglang:${server.url}?model_dir=${modelDir}`),
  swapTo: () => Promise.resolve({ modelDir, version: 4 }),
});

describe("sglang adapter", () => {
  const prompt = [257, 117, 10];
  it("sends input_ids with sampling_params (seed, untruncated) and return_logprob", async () => {
    const engine = await createEngine(`sglang:${server.url}`);
    await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 5, seed: 9 } });
    expect(server.requests.at(-1)?.body).toMatchObject({
      input_ids: prompt,
      return_logprob: true,
      sampling_params: { max_new_tokens: 5, temperature: 1, top_p: 1, top_k: -1, min_p: 0, sampling_seed: 9, stop_token_ids: engine.tokenizer.stopTokenIds, skip_special_tokens: false },
    });
    await engine.close();
  });

  it("updates weights from disk, tracks the version, and surfaces a failed update", async () => {
    const engine = await createEngine(`sglang:${server.url}`);
    if (!isHotSwappable(engine)) throw new Error("not hot-swappable");
    await engine.loadPolicy(modelDir, 12);
    expect(server.reloads.at(-1)).toEqual({ model_path: modelDir, version: "12" });
    expect(engine.policyVersion).toBe(12);
    const r = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 2 } });
    expect(r.policyVersion).toBe(12);
    await expect(engine.loadPolicy(join(root, "missing"), 13)).rejects.toThrow(/not found/);
    expect(engine.policyVersion).toBe(12);
  });

  it("stamps results with the server's weight_version when the server reports one", async () => {
    const engine = await createEngine(`sglang:${server.url}?version=0`);
    server.weightVersion = 21; // the deployment moved the server on by itself
    const r = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 2 } });
    expect(r.policyVersion).toBe(21);
  });

  it("holds new requests while a weight update is in flight", async () => {
    const engine = await createEngine(`sglang:${server.url}`);
    if (!isHotSwappable(engine)) throw new Error("not hot-swappable");
    const swap = engine.loadPolicy(modelDir, 30);
    const r = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 2 } });
    await swap;
    expect(r.policyVersion).toBe(30);
  });
});

describe("sglang adapter with LoRA policies (?lora=1)", () => {
  it("loads each version's adapter through /load_lora_adapter and names it as the request's lora_path", async () => {
    const engine = await createEngine(`sglang:${server.url}?model_dir=${modelDir}&lora=1`);
    if (!isHotSwappable(engine)) throw new Error("not hot-swappable");
    const params = { ...DEFAULT_SAMPLING, maxTokens: 2 };
    await engine.generate({ promptTokens: [257, 10], params });
    expect(server.requests.at(-1)?.body.lora_path).toBeUndefined();
    const v1 = adapterVersionDir(root, "lora-v1");
    await engine.loadPolicy(v1, 1);
    expect(server.adapters.get("policy-v1")).toBe(join(v1, "adapter"));
    await engine.generate({ promptTokens: [257, 10], params });
    expect(server.requests.at(-1)?.body.lora_path).toBe("policy-v1");
    expect(server.reloads.filter((r) => r.model_path === v1)).toHaveLength(0); // no full weight reload
    server.adapters.set("policy-v2", "taken");
    await expect(engine.loadPolicy(adapterVersionDir(root, "lora-v2"), 2)).rejects.toThrow(/policy-v2 failed/);
    expect(engine.policyVersion).toBe(1);
    await engine.close();
  });
});

describe("sglang adapter on a model with padded vocabulary rows", () => {
  it("sends sampling_params.logit_bias of −100 for every row without text (none for an unpadded model)", () =>
    expectPaddedRowsBiased("sglang", server, root, modelDir, (body) => (body.sampling_params as { logit_bias?: Record<string, number> } | undefined)?.logit_bias));
});
