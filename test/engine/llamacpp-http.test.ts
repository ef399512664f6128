import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/core/errors.js";
import { createEngine } from "../../src/engine/index.js";
import { LlamaCppEngine } from "../../src/engine/llamacpp/engine.js";
import { llamaCppOptions } from "../../src/engine/llamacpp/options.js";
import { EngineService } from "../../src/engine/service/server.js";
import { parseEngineSpec } from "../../src/engine/spec.js";
import { DEFAULT_SAMPLING, isHotSwappable, type SamplingEngine } from "../../src/engine/types.js";
import { policyDigest } from "../../src/weights/digest.js";
import { writeRandomModelDir, type RandomModelSpec } from "../../src/weights/random-model.js";
import { startProxy } from "../proxy/helpers.js";
import { runEngineContract } from "./engine-contract.js";

// `harnessrl serve`'s service around a real llama.cpp engine on a tiny random model, and its client adapter
// `llamacpp-http`, which must pass the same engine contract as every other engine.
const root = mkdtempSync(join(tmpdir(), "harnessrl-served-"));
const cache = join(root, "cache");
const small: Omit<RandomModelSpec, "seed"> = { modelType: "qwen3", hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, intermediateSize: 128, tieWordEmbeddings: true };
function modelDir(name: string, seed: number): string {
  const dir = join(root, name);
  if (!existsSync(dir)) writeRandomModelDir(dir, { ...small, seed });
  return dir;
}
const base = modelDir("base", 1);
const TOKEN = "gen-token-0123456789abcdef";
const ADMIN = "admin-token-0123456789abcdef";
process.env.HARNESSRL_SERVE_TOKEN = TOKEN;
process.env.HARNESSRL_SERVE_ADMIN_TOKEN = ADMIN;

interface Served {
  engine: LlamaCppEngine;
  service: EngineService;
  url: string;
}

async function serve(dir: string, name: string, sequences = 8): Promise<Served> {
  const engine = await LlamaCppEngine.create(`llamacpp:${dir}`, llamaCppOptions(parseEngineSpec(`llamacpp:${dir}?threads=1&sequences=${sequences}&ctx=4096&cache=${cache}`)));
  const service = new EngineService({ engine, modelDir: dir, token: TOKEN, adminToken: ADMIN, uploadDir: join(root, `uploads-${name}`), maxBodyBytes: 1024 * 1024 });
  const url = await service.listen(0, "127.0.0.1");
  return { engine, service, url };
}

async function stop(s: Served | undefined): Promise<void> {
  await s?.service.close();
  await s?.engine.close();
}

afterAll(() => rmSync(root, { recursive: true, force: true }));

let shared: Served | undefined;
beforeAll(async () => {
  shared = await serve(base, "contract");
}, 60_000);
afterAll(() => stop(shared));

runEngineContract({
  name: "llamacpp-http (harnessrl serve around a real llama.cpp engine, weights pushed)",
  create: () => createEngine(`llamacpp-http:${shared?.url ?? ""}`),
  swapTo: () => Promise.resolve({ modelDir: modelDir("swap", 2), version: 1 }),
});

describe("harnessrl serve", () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(base, "own", 4);
  }, 60_000);
  afterAll(() => stop(s));

  const post = (path: string, body: unknown, token: string | null = TOKEN, method = "POST"): Promise<Response> =>
    fetch(`${s.url}${path}`, { method, headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: typeof body === "string" ? body : JSON.stringify(body) });
  const params = { temperature: 1, max_tokens: 4, top_p: 1, top_k: 0, min_p: 0, seed: 1 };

  it("answers /v1/info with the model, context, policy version and the engine instance that also stamps every generation", async () => {
    const info = (await (await fetch(`${s.url}/v1/info`)).json()) as Record<string, unknown>;
    expect(info).toMatchObject({ service: "harnessrl-serve", protocol: 1, model: "base", context_window: 4096, policy_version: 0, engine_instance: s.engine.instanceId, auth: true });
    expect(s.engine.instanceId).toMatch(/^llamacpp@.+\/\d+\/[0-9a-f]{8}$/);
    const client = await createEngine(`llamacpp-http:${s.url}`);
    const r = await client.generate({ promptTokens: [257, 117, 10], params: { ...DEFAULT_SAMPLING, maxTokens: 4, seed: 1 } });
    expect([r.policyVersion, r.engineInstance]).toEqual([0, s.engine.instanceId]);
    // The codec came from the server: the client needed no model directory.
    expect(client.tokenizer.vocabSize).toBe(s.engine.tokenizer.vocabSize);
    expect(client.renderer.render([{ role: "user", content: "hi" }], [], { addGenerationPrompt: true })).toBe(s.engine.renderer.render([{ role: "user", content: "hi" }], [], { addGenerationPrompt: true }));
    await client.close();
  }, 60_000);

  it("serves a new policy version pushed through the endpoint before the call returns; later generations of every client report it and sample from its weights", async () => {
    const trainer = await createEngine(`llamacpp-http:${s.url}`);
    const node = await createEngine(`llamacpp-http:${s.url}?weights=path`);
    if (!isHotSwappable(trainer) || !isHotSwappable(node)) throw new Error("the served engine must be hot-swappable");
    const prompt = [257, 117, 10, 104, 105];
    const sample = (e: SamplingEngine): ReturnType<SamplingEngine["generate"]> => e.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 6, seed: 77 } });
    const before = await sample(node);
    expect(before.policyVersion).toBe(0);

    await trainer.loadPolicy(modelDir("pushed", 5), 5);
    expect(trainer.policyVersion).toBe(5);
    expect(s.engine.policyVersion).toBe(5);
    // The upload is gone once loaded (the engine keeps its own GGUF).
    expect(readdirSync(join(root, "uploads-own"))).toEqual([]);
    const after = await sample(node);
    expect(after.policyVersion).toBe(5);
    expect(node.policyVersion).toBe(5);
    expect(after.engineInstance).toBe(s.engine.instanceId);
    // Other weights: the same seed gives other logprobs (the number alone could be stamped without a swap).
    expect(after.logprobs).not.toEqual(before.logprobs);

    // The same model directory as a server-side path (a shared disk) is the same policy: same seed, same answer.
    await node.loadPolicy(modelDir("pushed", 5), 6);
    const viaPath = await sample(trainer);
    expect(viaPath.policyVersion).toBe(6);
    expect(viaPath.tokens).toEqual(after.tokens);
    viaPath.logprobs.forEach((lp, i) => expect(Math.abs(lp - (after.logprobs[i] ?? 0))).toBeLessThan(1e-5));
    await trainer.close();
    await node.close();
  }, 120_000);

  it("refuses requests without the right bearer token, and policy loads with the generation token", async () => {
    for (const token of [null, "wrong", `${TOKEN}x`]) {
      const res = await post("/v1/generate", { prompt: [1], params }, token);
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ error: { code: "unauthorized", fault: "user", retryable: false } });
    }
    const load = await post("/v1/policy", { version: 9, model_dir: base }, TOKEN);
    expect([load.status, ((await load.json()) as { error: { code: string } }).error.code]).toEqual([401, "unauthorized"]);
    const upload = await fetch(`${s.url}/v1/policy/uploads/9/config.json`, { method: "PUT", headers: { authorization: `Bearer ${TOKEN}` }, body: "{}" });
    expect(upload.status).toBe(401);
    expect((await fetch(`${s.url}/v1/codec`)).status).toBe(401);
    // The client rebuilds the server's refusal as the user error it is.
    const client = await createEngine(`llamacpp-http:${s.url}?token_env=HARNESSRL_TEST_NO_SUCH_TOKEN&model_dir=${base}`);
    const err = await client.generate({ promptTokens: [257], params: DEFAULT_SAMPLING }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect(err).toMatchObject({ code: "unauthorized" });
    expect(s.engine.policyVersion).not.toBe(9);
    await client.close();
  });

  it("refuses malformed bodies in shape (400/404/405/413, {error: {code, message, fault}}), and keeps serving", async () => {
    const cases: [string, () => Promise<Response>, number, string, RegExp?][] = [
      ["not JSON", () => post("/v1/generate", "{prompt: [1"), 400, "invalid_engine_request", /not JSON/],
      ["strings as tokens", () => post("/v1/generate", { prompt: ["a"], params }), 400, "invalid_engine_request", /prompt/],
      ["empty prompt", () => post("/v1/generate", { prompt: [], params }), 400, "invalid_engine_request", /prompt/],
      ["negative temperature", () => post("/v1/generate", { prompt: [1], params: { ...params, temperature: -1 } }), 400, "invalid_engine_request", /temperature/],
      ["unknown key", () => post("/v1/generate", { prompt: [1], params, extra: 1 }), 400, "invalid_engine_request", /extra/],
      ["missing params", () => post("/v1/generate", { prompt: [1] }), 400, "invalid_engine_request", /params/],
      ["token outside the vocabulary", () => post("/v1/generate", { prompt: [1, 10_000_000], params }), 400, "invalid_token"],
      ["nested too deep", () => post("/v1/generate", `${"[".repeat(5000)}${"]".repeat(5000)}`), 400, "invalid_engine_request", /nests/],
      ["over the size limit", () => post("/v1/generate", { prompt: Array.from({ length: 600_000 }, () => 1), params }), 413, "payload_too_large"],
      ["an array as the body", () => post("/v1/generate", [1, 2]), 400, "invalid_engine_request"],
      ["policy without version", () => post("/v1/policy", { model_dir: base }, ADMIN), 400, "invalid_engine_request", /version/],
      ["policy never uploaded", () => post("/v1/policy", { version: 40, uploaded: true }, ADMIN), 400, "invalid_engine_request", /uploaded/],
      ["policy directory that does not exist", () => post("/v1/policy", { version: 41, model_dir: join(root, "nope") }, ADMIN), 400, "model_dir_not_found"],
      ["upload name that climbs", () => fetch(`${s.url}/v1/policy/uploads/3/..%2Fx`, { method: "PUT", headers: { authorization: `Bearer ${ADMIN}` }, body: "x" }), 400, "invalid_engine_request", /file name/],
      ["upload version that is not a number", () => fetch(`${s.url}/v1/policy/uploads/v3/config.json`, { method: "PUT", headers: { authorization: `Bearer ${ADMIN}` }, body: "x" }), 400, "invalid_engine_request", /version/],
      ["unknown route", () => post("/v1/completions", {}), 404, "not_found"],
      ["wrong method", () => post("/v1/generate", undefined as unknown as string, TOKEN, "GET"), 405, "method_not_allowed"],
    ];
    for (const [what, send, status, code, message] of cases) {
      const res = await send();
      const body = (await res.json()) as { error: { code: string; message: string; fault: string } };
      expect([what, res.status, body.error.code], what).toEqual([what, status, code]);
      expect(body.error.fault).toBe("user");
      if (message) expect(body.error.message).toMatch(message);
    }
    const ok = await post("/v1/generate", { prompt: [257, 10], params });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ policy_version: s.engine.policyVersion, engine_instance: s.engine.instanceId, finish_reason: expect.any(String) });
  }, 60_000);

  it("two proxies (two nodes) share the served engine: the official OpenAI and Anthropic clients get answers, and every record names the instance and version that sampled it", async () => {
    const script = (): { content: string } => ({ content: "unused: a real engine answers" });
    const nodeA = await startProxy(script, { engineOverride: await createEngine(`llamacpp-http:${s.url}`) });
    const nodeB = await startProxy(script, { engineOverride: await createEngine(`llamacpp-http:${s.url}`) });
    try {
      const a = nodeA.session("node-a");
      const b = nodeB.session("node-b");
      const chat = await nodeA.openai(a.apiKey).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "hi" }], max_tokens: 5 });
      expect(chat.choices[0]?.message).toBeDefined();
      const stream = await nodeB.openai(b.apiKey).chat.completions.create({ model: "policy", messages: [{ role: "user", content: "hi" }], max_tokens: 5, stream: true });
      for await (const chunk of stream) expect(chunk.object).toBe("chat.completion.chunk");
      const version = s.engine.policyVersion + 1;
      const trainer = await createEngine(`llamacpp-http:${s.url}`);
      if (!isHotSwappable(trainer)) throw new Error("not hot-swappable");
      await trainer.loadPolicy(modelDir("records", 3), version);
      await trainer.close();
      const msg = await nodeB.anthropic(b.apiKey).messages.create({ model: "policy", max_tokens: 5, messages: [{ role: "user", content: "hi" }] });
      expect(msg.type).toBe("message");
      const [ra] = nodeA.calls(a.sessionId);
      const [rb1, rb2] = nodeB.calls(b.sessionId);
      for (const r of [ra, rb1, rb2]) {
        expect(r?.status).toBe("ok");
        expect(r?.schemaVersion).toBe(5);
        expect(r?.engineInstance).toBe(s.engine.instanceId);
      }
      expect([ra?.policyVersion, rb1?.policyVersion, rb2?.policyVersion]).toEqual([version - 1, version - 1, version]);
    } finally {
      await nodeA.close();
      await nodeB.close();
    }
  }, 120_000);

  it("with ?sync=1 (a trainer's engine) makes the server serve the model directory's version at connect, and leaves it alone when it already does", async () => {
    const dir = join(root, "resumed-v7");
    writeRandomModelDir(dir, { ...small, seed: 7, policyVersion: 7 });
    const trainer = await createEngine(`llamacpp-http:${s.url}?sync=1&model_dir=${dir}`);
    expect([trainer.policyVersion, s.engine.policyVersion]).toEqual([7, 7]);
    const loads = s.engine.loadTimings.length;
    const again = await createEngine(`llamacpp-http:${s.url}?sync=1&model_dir=${dir}`);
    expect(s.engine.loadTimings.length).toBe(loads);
    await Promise.all([trainer.close(), again.close()]);
    await expect(createEngine(`llamacpp-http:${s.url}?sync=1`)).rejects.toMatchObject({ code: "invalid_engine_spec" });
  }, 60_000);

  it("with ?sync=1 loads the run's policy when the server serves another model under the same version number (the weights' digest tells them apart)", async () => {
    // A service started on some model (v0), and a run whose own v0 is other weights (e.g. a checkpoint's).
    const other = await serve(base, "other-v0", 2);
    try {
      const dir = join(root, "run-v0");
      writeRandomModelDir(dir, { ...small, seed: 11, policyVersion: 0 });
      const info = async (): Promise<{ policy_version: number; policy_digest?: string }> => (await (await fetch(`${other.url}/v1/info`)).json()) as { policy_version: number; policy_digest?: string };
      expect(await info()).toMatchObject({ policy_version: 0, policy_digest: policyDigest(base) });
      const loads = other.engine.loadTimings.length;
      const trainer = await createEngine(`llamacpp-http:${other.url}?sync=1&model_dir=${dir}`);
      expect(other.engine.loadTimings.length).toBe(loads + 1);
      expect(await info()).toMatchObject({ policy_version: 0, policy_digest: policyDigest(dir) });
      // Now it serves the run's v0: connecting again loads nothing.
      const again = await createEngine(`llamacpp-http:${other.url}?sync=1&model_dir=${dir}`);
      expect(other.engine.loadTimings.length).toBe(loads + 1);
      await Promise.all([trainer.close(), again.close()]);
    } finally {
      await stop(other);
    }
  }, 120_000);

  it("rejects bad client specs before connecting", async () => {
    await expect(createEngine("llamacpp-http:not a url")).rejects.toMatchObject({ code: "invalid_engine_spec" });
    await expect(createEngine("llamacpp-http:http://user:pw@127.0.0.1:1")).rejects.toMatchObject({ code: "invalid_engine_spec" });
    await expect(createEngine(`llamacpp-http:${s.url}?weights=rsync`)).rejects.toMatchObject({ code: "invalid_engine_spec" });
    await expect(createEngine("llamacpp-http:http://127.0.0.1:1?timeout_ms=2000")).rejects.toMatchObject({ code: "engine_unreachable", retryable: true });
  });
});
