/**
 * `npm run bench:serve`: what serving the llama.cpp engine over HTTP (`harnessrl serve` + the `llamacpp-http` client)
 * costs against the same engine in process, on one machine: per-request latency (plain and streamed), throughput with
 * 8 concurrent requests (median of 3 rounds), and loading a new policy version (weights pushed over HTTP, or named as a path). Writes
 * docs/bench/serve.json.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { InfraError } from "../core/errors.js";
import { registerBuiltins } from "../builtins.js";
import { createEngine } from "../engine/index.js";
import { LlamaCppEngine } from "../engine/llamacpp/engine.js";
import { llamaCppOptions } from "../engine/llamacpp/options.js";
import { EngineService } from "../engine/service/server.js";
import { parseEngineSpec } from "../engine/spec.js";
import { DEFAULT_SAMPLING, isHotSwappable, type SamplingEngine } from "../engine/types.js";
import { modelWeightFiles } from "../weights/safetensors.js";
import { writeRandomModelDir, type RandomModelSpec } from "../weights/random-model.js";
import { latencySummary } from "./stats.js";

const MODEL: Omit<RandomModelSpec, "seed"> = { modelType: "qwen3", hiddenSize: 256, numLayers: 4, numHeads: 4, numKvHeads: 2, intermediateSize: 768, tieWordEmbeddings: true };
const REQUESTS = 30;
const TOKENS = 32;
const round = (x: number, digits = 1): number => Number(x.toFixed(digits));

interface Variant {
  variant: string;
  sequentialP50Ms: number;
  sequentialP99Ms: number;
  streamedP50Ms: number;
  concurrent8TokensPerS: number;
}

/**
 * Both engines measured in the same loop, request by request alternating, so the shared machine's changing load hits
 * them alike (measured one after the other, the first variant ran up to 1.5× slower or faster from load alone).
 */
async function measure(engines: readonly [string, SamplingEngine][]): Promise<Variant[]> {
  const prompt = Array.from({ length: 64 }, (_, i) => 257 + (i % 3));
  const params = { ...DEFAULT_SAMPLING, maxTokens: TOKENS, temperature: 1 };
  const plain = engines.map((): number[] => []);
  const streamed = engines.map((): number[] => []);
  const rate = engines.map((): number[] => []);
  // Warm-up: the first request pays for the sequence's first prompt evaluation.
  for (const [, e] of engines) await e.generate({ promptTokens: prompt, params: { ...params, seed: 0 } });
  for (let i = 0; i < REQUESTS; i++) {
    for (const [k, [, e]] of engines.entries()) {
      const t0 = performance.now();
      await e.generate({ promptTokens: prompt, params: { ...params, seed: i } });
      plain[k]?.push(performance.now() - t0);
      const t1 = performance.now();
      await e.generate({ promptTokens: prompt, params: { ...params, seed: i }, onToken: () => undefined });
      streamed[k]?.push(performance.now() - t1);
    }
  }
  for (let round = 0; round < 3; round++) {
    for (const [k, [, e]] of engines.entries()) {
      const t0 = performance.now();
      const counts = await Promise.all(Array.from({ length: 8 }, (_, c) => e.generate({ promptTokens: [...prompt, c], params: { ...params, seed: round * 10 + c } })));
      rate[k]?.push(counts.reduce((a, r) => a + r.tokens.length, 0) / ((performance.now() - t0) / 1000));
    }
  }
  return engines.map(([variant], k) => {
    const p = latencySummary(plain[k] ?? []);
    return { variant, sequentialP50Ms: round(p.p50), sequentialP99Ms: round(p.p99), streamedP50Ms: round(latencySummary(streamed[k] ?? []).p50), concurrent8TokensPerS: round(latencySummary(rate[k] ?? []).p50) };
  });
}

async function main(): Promise<void> {
  registerBuiltins();
  const root = mkdtempSync(join(tmpdir(), "harnessrl-bench-serve-"));
  const out = resolve(process.argv[2] ?? "docs/bench/serve.json");
  try {
    const base = join(root, "base");
    writeRandomModelDir(base, { ...MODEL, seed: 1 });
    const spec = `llamacpp:${base}?threads=1&sequences=8&ctx=2048&cache=${join(root, "cache")}`;
    const local = await LlamaCppEngine.create(spec, llamaCppOptions(parseEngineSpec(spec)));
    const engine = await LlamaCppEngine.create(spec, llamaCppOptions(parseEngineSpec(spec)));
    const service = new EngineService({ engine, modelDir: base, token: "bench-token", adminToken: "bench-admin", uploadDir: join(root, "uploads") });
    const url = await service.listen(0, "127.0.0.1");
    process.env.HARNESSRL_SERVE_TOKEN = "bench-token";
    process.env.HARNESSRL_SERVE_ADMIN_TOKEN = "bench-admin";
    const client = await createEngine(`llamacpp-http:${url}`);
    const variants = await measure([["llamacpp in process", local], ["llamacpp-http (harnessrl serve on 127.0.0.1)", client]]);
    await local.close();
    const pathClient = await createEngine(`llamacpp-http:${url}?weights=path`);
    if (!isHotSwappable(client) || !isHotSwappable(pathClient)) throw new InfraError("internal", "the served engine is hot-swappable");
    const loads: { mode: string; version: number; ms: number }[] = [];
    for (let v = 1; v <= 6; v++) {
      const dir = join(root, `v${v}`);
      writeRandomModelDir(dir, { ...MODEL, seed: v + 1 });
      const mode = v % 2 === 1 ? "push" : "path";
      const t0 = performance.now();
      await (mode === "push" ? client : pathClient).loadPolicy(dir, v);
      loads.push({ mode, version: v, ms: round(performance.now() - t0) });
    }
    const weightBytes = modelWeightFiles(join(root, "v1")).reduce((a, f) => a + statSync(f).size, 0);
    await client.close();
    await pathClient.close();
    await service.close();
    await engine.close();
    const p50 = (mode: string): number => latencySummary(loads.filter((l) => l.mode === mode).map((l) => l.ms)).p50;
    const result = {
      when: new Date().toISOString(),
      machine: "shared 2-core machine (other sessions' load)",
      model: { ...MODEL, weightBytes },
      requests: REQUESTS,
      tokensPerRequest: TOKENS,
      variants,
      policyLoads: { pushP50Ms: p50("push"), pathP50Ms: p50("path"), all: loads },
    };
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    console.log(JSON.stringify(result, null, 2));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
