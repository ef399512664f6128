import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defaultCodec, loadCodec } from "../../src/chat/codec.js";
import { UserError } from "../../src/core/errors.js";
import { createEngine } from "../../src/engine/registry.js";
import { llamaCppOptions } from "../../src/engine/llamacpp/options.js";
import { formatEngineSpec, parseEngineSpec } from "../../src/engine/spec.js";
import { RolloutStack } from "../../src/rollout/stack.js";
import { buildRunContext, runEngine, runStackOptions } from "../../src/run/context.js";
import { openStore } from "../../src/store/registry.js";
import { ByteTokenizer } from "../../src/tokenizer/bytes.js";
import { parseRunConfig } from "../../src/train/config.js";
import { TorchTrainer } from "../../src/trainer/torch/torch-trainer.js";
import { writeRandomModelDir } from "../../src/weights/random-model.js";
import { codeCorpus, trainedTokenizerJson } from "../tokenizer/trained-bpe.js";
import { runCli as cli } from "../setup/cli.js";

const root = mkdtempSync(join(tmpdir(), "hrl-runctx-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const base = { harnesses: ["chat-agent"], tasks: { train: "calcrun:train?n=2" } };


describe("engine specs: the text form is parsed once into a structure", () => {
  it("splits kind, target (colons kept) and options", () => {
    expect(parseEngineSpec("llamacpp:/models/tiny?threads=2&sequences=8")).toEqual({ kind: "llamacpp", target: "/models/tiny", options: { threads: "2", sequences: "8" } });
    expect(parseEngineSpec("vllm:http://gpu:8000/v1?model_dir=/m&model=policy")).toEqual({ kind: "vllm", target: "http://gpu:8000/v1", options: { model_dir: "/m", model: "policy" } });
    expect(parseEngineSpec("oracle")).toEqual({ kind: "oracle", target: "", options: {} });
    expect(() => parseEngineSpec(":x")).toThrow(UserError);
  });

  it("formats a structured spec for display, model directory included", () => {
    expect(formatEngineSpec({ kind: "llamacpp", target: "", modelDir: "/run/policy/v0003", options: { sequences: 16, threads: 1 } })).toBe("llamacpp:/run/policy/v0003?sequences=16&threads=1");
    expect(formatEngineSpec({ kind: "sglang", target: "http://h:30000", modelDir: "/m", options: {} })).toBe("sglang:http://h:30000?model_dir=%2Fm");
    expect(formatEngineSpec({ kind: "oracle", target: "", options: {} })).toBe("oracle");
  });

  it("keeps the oracle an engine kind that only the rollout stack can create", async () => {
    await import("../../src/rollout/oracle/register.js");
    await expect(createEngine("oracle")).rejects.toMatchObject({ code: "oracle_needs_rollouts" });
    await expect(RolloutStack.open({ engine: "oracle:x", store: "memory", sandbox: "local-unsafe" })).rejects.toMatchObject({ code: "invalid_engine_spec" });
    const r = await cli(["list", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { engines: { name: string }[] }).engines.map((e) => e.name)).toEqual(expect.arrayContaining(["oracle", "scripted", "llamacpp", "vllm", "sglang"]));
  }, 60_000);
});

describe("buildRunContext", () => {
  it("turns the engine section into a structured spec serving each policy version's directory", () => {
    const ctx = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m" }, engine: { threads: 1, sequences: 4, batch: "shared", contexts: 2 } }), { runDir: join(root, "llama") });
    const spec = runEngine(ctx, { policyDir: ctx.run.policyDir(3) });
    expect(spec).toEqual({ kind: "llamacpp", target: "", modelDir: ctx.run.policyDir(3), options: { sequences: 4, threads: 1, batch: "shared", contexts: 2 } });
    expect(runStackOptions(ctx, spec, ctx.stores.rollouts)).toMatchObject({ engine: spec, codec: ctx.policy.codec, store: `sqlite:${join(root, "llama", "records.sqlite")}`, sandbox: "bwrap", sandboxPool: 8, sampling: { temperature: 1, maxTokens: 128, topK: 0 } });
    // sampling.top_k reaches the proxy's sampling (which overrides whatever the harness asks for).
    const topK = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m" }, sampling: { top_k: 5000 } }), { runDir: join(root, "top-k") });
    expect(runStackOptions(topK, spec, topK.stores.rollouts).sampling).toEqual({ temperature: 1, maxTokens: 128, topK: 5000 });
    expect(() => parseRunConfig({ ...base, sampling: { top_k: -1 } })).toThrow(/sampling\.top_k/);
    expect(runEngine(ctx, "oracle")).toEqual({ kind: "oracle", target: "", options: {} });
    const remote = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m" }, engine: { kind: "vllm", url: "http://gpu:8000" } }), { runDir: join(root, "vllm") });
    expect(runEngine(remote, { policyDir: "/p" })).toEqual({ kind: "vllm", target: "http://gpu:8000", modelDir: "/p", options: {} });
  });

  it("renders a Qwen3 preset's run with Qwen3's tokenizer and template (what model init writes), tiny presets with bytes", () => {
    const qwen = buildRunContext(parseRunConfig({ ...base, model: { preset: "qwen3-tiny" } }), { runDir: join(root, "q3") });
    expect(qwen.policy.codec.tokenizer.kind).toBe("hf-bpe");
    expect(qwen.policy.codec.tokenizer.encode("<|im_start|>")).toHaveLength(1);
    expect(qwen.policy.codec.tokenizer.vocabSize).toBeGreaterThan(151_000);
    const tiny = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m" } }), { runDir: join(root, "t1") });
    expect(tiny.policy.codec.tokenizer.kind).toBe("bytes");
  });

  it("passes engine.context_size to llama.cpp as ctx (and to remote engines as their reported window), and validates it", () => {
    const long = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m" }, engine: { sequences: 2, context_size: 32768 } }), { runDir: join(root, "long") });
    expect(runEngine(long, { policyDir: "/p" }).options).toEqual({ sequences: 2, ctx: 32768 });
    expect(formatEngineSpec(runEngine(long, { policyDir: "/p" }))).toBe("llamacpp:/p?sequences=2&ctx=32768");
    const remote = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m" }, engine: { kind: "sglang", url: "http://gpu:30000", context_size: 40960 } }), { runDir: join(root, "sg") });
    expect(runEngine(remote, { policyDir: "/p" }).options).toEqual({ ctx: 40960 });
    // `harnessrl serve` keeps its own window; the trainer's client makes it serve the run's current version.
    const served = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m", lora: { rank: 4 } }, engine: { kind: "llamacpp-http", url: "http://10.0.0.2:8500", context_size: 40960 } }), { runDir: join(root, "served") });
    expect(formatEngineSpec(runEngine(served, { policyDir: "/p" }))).toBe("llamacpp-http:http://10.0.0.2:8500?sync=1&model_dir=%2Fp");
    expect(() => parseRunConfig({ ...base, engine: { kind: "llamacpp-http" } })).toThrow(/engine\.url/);
    expect(() => parseRunConfig({ ...base, engine: { context_size: 100 } })).toThrow(/context_size/);
    expect(() => parseRunConfig({ ...base, engine: { context_size: 8192.5 } })).toThrow(/context_size/);
  });

  it("passes engine.share_prefix to llama.cpp as share, and refuses it for engines that cache prefixes themselves", () => {
    const off = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m" }, engine: { sequences: 4, share_prefix: 0 } }), { runDir: join(root, "share0") });
    expect(formatEngineSpec(runEngine(off, { policyDir: "/p" }))).toBe("llamacpp:/p?sequences=4&share=0");
    expect(llamaCppOptions(runEngine(off, { policyDir: "/p" })).shareMinTokens).toBe(0);
    const byDefault = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m" }, engine: { sequences: 4 } }), { runDir: join(root, "share-default") });
    expect(llamaCppOptions(runEngine(byDefault, { policyDir: "/p" })).shareMinTokens).toBe(1024);
    expect(() => parseRunConfig({ ...base, engine: { kind: "vllm", url: "http://gpu:8000", share_prefix: 512 } })).toThrow(/share_prefix is the embedded llama\.cpp engine's/);
    expect(() => parseRunConfig({ ...base, engine: { share_prefix: -1 } })).toThrow(/share_prefix/);
  });

  it("takes trainer backend, device and thread counts from the config's trainer section", () => {
    const defaults = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m" } }), { runDir: join(root, "t1") });
    expect(defaults.trainer).toEqual({ kind: "torch", policy: { threads: 2 }, reference: { threads: 1 } });
    const set = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m" }, trainer: { kind: "torch", device: "cpu", threads: 3, reference_threads: 2 } }), { runDir: join(root, "t2") });
    expect(set.trainer).toEqual({ kind: "torch", policy: { device: "cpu", threads: 3 }, reference: { device: "cpu", threads: 2 } });
    expect(() => parseRunConfig({ ...base, model: { preset: "tiny-1m" }, trainer: { thread: 2 } })).toThrow(/trainer/);
    expect(() => parseRunConfig({ ...base, model: { preset: "tiny-1m" }, engine: { kind: "sglang" } })).toThrow(/engine\.url/);
  });

  it("gives a tiny preset the byte codec, which is the codec of the model directory the trainer makes for it", async () => {
    const ctx = buildRunContext(parseRunConfig({ ...base, model: { preset: "tiny-1m", seed: 1 } }), { runDir: join(root, "preset") });
    expect(ctx.policy.codec).toBe(defaultCodec());
    const trainer = await TorchTrainer.start({ threads: 1 });
    try {
      await trainer.init({ preset: "tiny-1m", seed: 1, out: ctx.run.policyDir(0) });
    } finally {
      await trainer.close();
    }
    const made = loadCodec(ctx.run.policyDir(0));
    const messages = [
      { role: "system" as const, content: "You solve tasks." },
      { role: "user" as const, content: "What is 12 × 7? Use the calculator: ./calc 12*7" },
    ];
    const tools = [{ name: "bash", description: "run a shell command", parameters: { type: "object", properties: { cmd: { type: "string" } } } }];
    const text = made.renderer.render(messages, tools, { addGenerationPrompt: true });
    expect(text).toBe(ctx.policy.codec.renderer.render(messages, tools, { addGenerationPrompt: true }));
    expect(made.tokenizer.encode(text)).toEqual(ctx.policy.codec.tokenizer.encode(text));
  }, 120_000);
});

describe("harnessrl rollout --model-dir: the CLI's context gives the oracle the policy's codec", () => {
  it("records BPE token ids for a model directory with a tokenizer.json", async () => {
    const modelDir = join(root, "bpe");
    writeRandomModelDir(modelDir, { modelType: "qwen3", hiddenSize: 32, numLayers: 1, numHeads: 2, numKvHeads: 1, intermediateSize: 64, seed: 1, hfTokenizer: trainedTokenizerJson(codeCorpus(100_000), 200), vocabSize: 512 });
    const out = join(root, "cli-rollout");
    const r = await cli(["rollout", "--engine", "oracle", "--model-dir", modelDir, "--tasks", "calcrun:train?n=1&seed=2", "--harness", "chat-agent", "--out", out, "--concurrency", "1", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const store = openStore(`sqlite:${join(out, "records.sqlite")}`);
    try {
      const calls = store.listCalls({});
      expect(calls.length).toBeGreaterThan(1);
      const codec = loadCodec(modelDir);
      for (const c of calls) {
        const text = codec.tokenizer.decode(c.promptTokens);
        expect(codec.tokenizer.encode(text)).toEqual(c.promptTokens);
        expect(c.promptTokens.length).toBeLessThan(new ByteTokenizer().encode(text).length * 0.8);
      }
    } finally {
      store.close();
    }
  }, 120_000);
});

describe("a rollout stack refuses an engine whose tokenizer is not the policy's", () => {
  it("fails with codec_mismatch when the engine's model directory has another tokenizer", async () => {
    const small = { modelType: "qwen3" as const, hiddenSize: 32, numLayers: 1, numHeads: 2, numKvHeads: 1, intermediateSize: 64, seed: 1 };
    const bytesDir = join(root, "mismatch-bytes");
    const bpeDir = join(root, "mismatch-bpe");
    writeRandomModelDir(bytesDir, small);
    writeRandomModelDir(bpeDir, { ...small, hfTokenizer: trainedTokenizerJson(codeCorpus(50_000), 50), vocabSize: 384 });
    const engine = { kind: "vllm", target: "http://127.0.0.1:9", modelDir: bytesDir, options: {} };
    await expect(RolloutStack.open({ engine, codec: loadCodec(bpeDir), store: "memory", sandbox: "local-unsafe" })).rejects.toMatchObject({ code: "codec_mismatch" });
    // The same engine with its own codec opens (and is closed again at once).
    const stack = await RolloutStack.open({ engine, codec: loadCodec(bytesDir), store: "memory", sandbox: "local-unsafe" });
    await stack.close();
  }, 60_000);
});
