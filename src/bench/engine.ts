/**
 * `npm run bench:engine`: the llama.cpp engine and the trainer worker on the tiny presets.
 *   - sampling tokens/s (aggregate) and process CPU time per token at concurrency 1, 8 and 32, untruncated sampling at
 *     temperature 1, for each engine layout in MODES (one engine each in this process, measured alternately over
 *     --rounds rounds, the order reversed every round; the median round is reported);
 *   - worker forward+backward tokens/s (the `forward_backward` op; forward-only `logprobs` is measured too);
 *   - GGUF export + reload time per policy version (`loadPolicy` with a new version: export, load, context).
 * Model directories are made by the PyTorch worker (`model init`). Writes docs/bench/engine.json and the summary in
 * docs/engines.md (between the bench markers).
 *
 * Options: --threads N (llama.cpp threads, default 1: on a busy 2-core machine a second spinning thread stalls), --tokens N (per concurrency level, default 1024),
 * --rounds N (alternating measurements per mode and level, default 3), --presets a,b (default tiny-1m,tiny-10m),
 * --swaps N (policy versions to load, default 3), --out FILE, --no-docs.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { PACKED_BATCH_VERSION, type PackedBatch } from "../batch/types.js";
import { registerBuiltins } from "../builtins.js";
import { createEngine } from "../engine/index.js";
import type { LlamaCppEngine } from "../engine/llamacpp/engine.js";
import { llamaCppOptions } from "../engine/llamacpp/options.js";
import { DEFAULT_SAMPLING, type SamplingEngine } from "../engine/types.js";
import { createTrainer } from "../trainer/index.js";
import type { Trainer } from "../trainer/types.js";
import { InfraError } from "../core/errors.js";

/** Engine layouts compared: spec query suffixes (32 sequences each). */
const MODES = ["batch=isolated", "batch=shared", "batch=shared&contexts=2"] as const;
type BatchMode = (typeof MODES)[number];

interface SamplingResult {
  concurrency: number;
  tokens: number;
  seconds: number;
  tokensPerSecond: number;
  /** Process CPU time (all threads) per sampled token, microseconds. */
  cpuMicrosPerToken: number;
}

interface ModeSampling {
  mode: BatchMode;
  /** Median round per concurrency level (by tokens/s). */
  sampling: SamplingResult[];
  /** Every round, in measurement order. */
  rounds: SamplingResult[][];
}

interface PresetResult {
  preset: string;
  parameters: number;
  modes: ModeSampling[];
  reload: { version: number; exportMs: number; loadMs: number; totalMs: number }[];
  worker: { forwardTokensPerSecond: number; forwardBackwardTokensPerSecond: number | null; batchTokens: number };
}

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

async function samplingThroughput(engine: SamplingEngine, concurrency: number, minTokens: number): Promise<SamplingResult> {
  const prompt = engine.tokenizer.encode(engine.renderer.render([{ role: "user", content: "Write a long story about a lighthouse." }], [], { addGenerationPrompt: true }));
  // Warm up (first evaluation allocates buffers).
  await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 8, seed: 1 } });
  let tokens = 0;
  let seed = 100;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (tokens < minTokens) {
      const r = await engine.generate({ promptTokens: prompt, params: { ...DEFAULT_SAMPLING, maxTokens: 256, seed: seed++ } });
      tokens += r.tokens.length;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { concurrency, tokens, seconds, tokensPerSecond: tokens / seconds, cpuMicrosPerToken: (cpu.user + cpu.system) / tokens };
}

const LEVELS = [1, 8, 32];

/** Alternates the modes (order flipped every round) so that both see the same machine load on average. */
async function compareModes(engines: ReadonlyMap<BatchMode, SamplingEngine>, rounds: number, minTokens: number, label: string): Promise<ModeSampling[]> {
  const all = new Map<BatchMode, SamplingResult[][]>(MODES.map((m) => [m, []]));
  for (let r = 0; r < rounds; r++) {
    const perMode = new Map<BatchMode, SamplingResult[]>(MODES.map((m) => [m, []]));
    for (const c of LEVELS) {
      for (const mode of r % 2 === 0 ? MODES : [...MODES].reverse()) {
        const engine = engines.get(mode);
        if (!engine) throw new InfraError("internal", `no engine for ${mode}`);
        const x = await samplingThroughput(engine, c, minTokens);
        perMode.get(mode)?.push(x);
        console.log(`${label} round ${r + 1} ${mode}: concurrency ${c}: ${x.tokens} tokens in ${x.seconds.toFixed(2)} s = ${x.tokensPerSecond.toFixed(0)} tok/s, ${x.cpuMicrosPerToken.toFixed(0)} µs CPU/token`);
      }
    }
    for (const mode of MODES) all.get(mode)?.push(perMode.get(mode) ?? []);
  }
  return MODES.map((mode) => ({
    mode,
    rounds: all.get(mode) ?? [],
    sampling: LEVELS.map((c) => {
      const xs = (all.get(mode) ?? []).map((round) => round.find((x) => x.concurrency === c)).filter((x): x is SamplingResult => x !== undefined);
      xs.sort((a, b) => a.tokensPerSecond - b.tokensPerSecond);
      return xs[Math.floor(xs.length / 2)] as SamplingResult;
    }),
  }));
}

function flatBatch(rows: number, length: number, vocab: number): PackedBatch {
  return {
    version: PACKED_BATCH_VERSION,
    meta: {},
    rows: Array.from({ length: rows }, (_, r) => {
      const trainable = new Uint8Array(length).fill(1);
      trainable[0] = 0;
      return {
        tokens: Int32Array.from({ length }, (_, i) => (r * 31 + i * 7) % vocab),
        parent: Int32Array.from({ length }, (_, i) => i - 1),
        positions: Int32Array.from({ length }, (_, i) => i),
        trainable,
        oldLogprobs: new Float32Array(length).fill(-5),
        policyVersion: new Int32Array(length),
        advantages: Float32Array.from({ length }, (_, i) => (i % 2 ? 1 : -1)),
        lossWeights: new Float32Array(length).fill(1 / (rows * length)),
        actionMask: new Uint8Array(length),
        argsMask: new Uint8Array(length),
      };
    }),
  };
}

async function workerThroughput(trainer: Trainer, vocab: number): Promise<PresetResult["worker"]> {
  const batch = flatBatch(8, 256, vocab);
  const batchTokens = 8 * 256;
  await trainer.logprobs(batch, { entropy: false });
  let t0 = performance.now();
  const reps = 3;
  for (let i = 0; i < reps; i++) await trainer.logprobs(batch, { entropy: false });
  const forwardTokensPerSecond = (reps * batchTokens) / ((performance.now() - t0) / 1000);
  let forwardBackwardTokensPerSecond: number | null = null;
  if (trainer.info.ops.includes("forward_backward")) {
    await trainer.forwardBackward(batch);
    await trainer.zeroGrad();
    t0 = performance.now();
    for (let i = 0; i < reps; i++) await trainer.forwardBackward(batch);
    forwardBackwardTokensPerSecond = (reps * batchTokens) / ((performance.now() - t0) / 1000);
    await trainer.zeroGrad();
  }
  return { forwardTokensPerSecond, forwardBackwardTokensPerSecond, batchTokens };
}

function markdown(results: PresetResult[], meta: Record<string, unknown>): string {
  const lines = [
    `Measured ${String(meta.date)} on ${String(meta.cpus)} cores (${String(meta.cpuModel)}), llama.cpp threads ${String(meta.threads)}, load average at start ${String(meta.loadavg)}.`,
    "",
    `Sampling: median of ${String(meta.rounds)} alternating rounds per batch mode (tokens/s, and process CPU µs per token in parentheses); 32 sequences × 1,024 context.`,
    "",
    "| preset | params | engine layout | sampling tok/s c=1 | c=8 | c=32 |",
    "| --- | ---: | --- | ---: | ---: | ---: |",
  ];
  for (const r of results) {
    for (const m of r.modes) {
      const s = (c: number): string => {
        const x = m.sampling.find((y) => y.concurrency === c);
        return x ? `${x.tokensPerSecond.toFixed(0)} (${x.cpuMicrosPerToken.toFixed(0)})` : "-";
      };
      lines.push(`| ${r.preset} | ${(r.parameters / 1e6).toFixed(2)}M | \`${m.mode}\` | ${s(1)} | ${s(8)} | ${s(32)} |`);
    }
  }
  lines.push("", "| preset | worker fwd tok/s | worker fwd+bwd tok/s | export + reload per version (ms, default batch mode) |", "| --- | ---: | ---: | ---: |");
  for (const r of results) {
    const reload = r.reload.length ? r.reload.map((x) => `${x.exportMs.toFixed(0)} + ${x.loadMs.toFixed(0)}`).join(", ") : "-";
    lines.push(`| ${r.preset} | ${r.worker.forwardTokensPerSecond.toFixed(0)} | ${r.worker.forwardBackwardTokensPerSecond?.toFixed(0) ?? "n/a"} | ${reload} |`);
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  registerBuiltins();
  const { values } = parseArgs({
    options: {
      threads: { type: "string", default: "1" },
      tokens: { type: "string", default: "1024" },
      rounds: { type: "string", default: "3" },
      presets: { type: "string", default: "tiny-1m,tiny-10m" },
      swaps: { type: "string", default: "3" },
      out: { type: "string", default: join(root, "docs", "bench", "engine.json") },
      "no-docs": { type: "boolean", default: false },
    },
  });
  const threads = Number(values.threads);
  const minTokens = Number(values.tokens);
  const swaps = Number(values.swaps);
  const rounds = Number(values.rounds);
  const work = mkdtempSync(join(tmpdir(), "harnessrl-bench-engine-"));
  const trainer = await createTrainer("torch");
  const results: PresetResult[] = [];
  const meta = { date: new Date().toISOString(), cpus: cpus().length, cpuModel: cpus()[0]?.model ?? "?", threads, loadavg: loadavg().map((x) => x.toFixed(2)).join(" "), tokensPerLevel: minTokens, rounds };
  try {
    for (const preset of values.presets.split(",")) {
      const dir = join(work, preset);
      const info = await trainer.init({ preset, seed: 1, out: dir });
      await trainer.load(dir, { dtype: "float32" });
      const vocab = Number(info.config.vocab_size);
      const spec = (mode: string): string => `llamacpp:${dir}?threads=${threads}&sequences=32&ctx=1024&${mode}&cache=${join(work, "cache")}`;
      const engines = new Map<BatchMode, SamplingEngine>();
      for (const m of MODES) engines.set(m, await createEngine(spec(m)));
      // Reloads are timed on the default layout.
      const engine = (await createEngine(spec(`batch=${llamaCppOptions({ kind: "llamacpp", target: dir, options: {} }).batch}`))) as LlamaCppEngine;
      let modes: ModeSampling[];
      try {
        modes = await compareModes(engines, rounds, minTokens, preset);
        for (let v = 1; v <= swaps; v++) await engine.loadPolicy(dir, v);
      } finally {
        await Promise.all([engine, ...engines.values()].map((e) => e.close()));
      }
      const reload = engine.loadTimings.filter((t) => t.version > 0).map((t) => ({ ...t, totalMs: t.exportMs + t.loadMs }));
      for (const t of reload) console.log(`${preset}: policy version ${t.version}: export ${t.exportMs.toFixed(0)} ms + load ${t.loadMs.toFixed(0)} ms`);
      const worker = await workerThroughput(trainer, vocab);
      console.log(`${preset}: worker forward ${worker.forwardTokensPerSecond.toFixed(0)} tok/s, forward+backward ${worker.forwardBackwardTokensPerSecond?.toFixed(0) ?? "n/a"} tok/s`);
      results.push({ preset, parameters: info.parameters, modes, reload, worker });
    }
  } finally {
    await trainer.close();
    rmSync(work, { recursive: true, force: true });
  }
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, JSON.stringify({ meta, results }, null, 2) + "\n");
  console.log(`wrote ${values.out}`);
  if (!values["no-docs"]) {
    const doc = join(root, "docs", "engines.md");
    const start = "<!-- bench:engine:start -->";
    const end = "<!-- bench:engine:end -->";
    if (existsSync(doc)) {
      const text = readFileSync(doc, "utf8");
      const i = text.indexOf(start);
      const j = text.indexOf(end);
      if (i >= 0 && j > i) {
        writeFileSync(doc, `${text.slice(0, i + start.length)}\n${markdown(results, meta)}\n${text.slice(j)}`);
        console.log(`updated ${doc}`);
      }
    }
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exitCode = 1;
});
