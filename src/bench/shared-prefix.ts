/**
 * `npm run bench:shared-prefix`: what sharing prompt prefixes across llama.cpp sequences (src/engine/llamacpp/
 * prefix-states.ts) saves on the shape of a Claude Code RL step, side by side with the engine without it, in one run.
 * A `qwen3-tiny`-shaped random model (hidden 64, 2 layers, GQA 4/2 heads of 32, Qwen3's 151,936-row vocabulary) and
 * one round = `--tasks` tasks × `--samples` sessions, all starting at once: each prompt is a `--prefix`-token system
 * prompt common to every task plus a `--suffix`-token task, as Claude Code's first calls are (~18.5k + ~450 Qwen3
 * tokens). The engines alternate round by round (the order reversed every round) so the machine's load hits both alike.
 * Reports wall time to the round's last first token and to its end, process CPU, and the prompt tokens evaluated.
 * Writes docs/bench/shared-prefix.json.
 *
 * Options: --tasks N (2), --samples N (4), --prefix N (18500), --suffix N (450), --tokens N (64, sampled per session),
 * --rounds N (2), --threads N (1, per sequence, as configs/real-claude-code.yaml), --share N (1024: the shared
 * engine's threshold), --shape qwen3-tiny | tiny-1m (the quickstart's model: byte vocabulary, 4 layers of 128),
 * --out FILE.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";
import { registerBuiltins } from "../builtins.js";
import { createEngine } from "../engine/index.js";
import type { LlamaCppEngine } from "../engine/llamacpp/engine.js";
import { DEFAULT_SAMPLING } from "../engine/types.js";
import { UserError } from "../core/errors.js";
import { mulberry32 } from "../core/random.js";
import { TINY_VOCAB, writeRandomModelDir, type RandomModelSpec } from "../weights/random-model.js";
import { writeBenchResult } from "./output.js";
import { median } from "./stats.js";

const round = (x: number, digits = 2): number => Number(x.toFixed(digits));
const QWEN3_VOCAB = 151_936;

/** Model shapes the bench can make (random weights, the presets' dimensions; worker/harnessrl_worker/presets.py). */
const SHAPES: Record<string, { spec: Omit<RandomModelSpec, "seed">; ids: [number, number]; label: string }> = {
  "qwen3-tiny": {
    spec: { modelType: "qwen3", hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 32, intermediateSize: 192, vocabSize: QWEN3_VOCAB, maxPositions: 40960 },
    ids: [300, 150_000],
    label: "qwen3-tiny shape (random weights), F32 KV",
  },
  "tiny-1m": {
    spec: { modelType: "qwen3", hiddenSize: 128, numLayers: 4, numHeads: 4, numKvHeads: 2, intermediateSize: 512, vocabSize: TINY_VOCAB, maxPositions: 8192 },
    ids: [32, 95],
    label: "tiny-1m shape (random weights, byte vocabulary), F32 KV",
  },
};

interface RoundResult {
  firstTokensS: number;
  wallS: number;
  cpuS: number;
  evaluated: number;
  shared: number;
}

async function runRound(engine: LlamaCppEngine, prompts: readonly number[][], samples: number, tokens: number, seed: number): Promise<RoundResult> {
  const before = { ...engine.promptTokens };
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let firstTokens = 0;
  const sessions = prompts.flatMap((prompt, t) =>
    Array.from({ length: samples }, (_, s) => {
      let first = true;
      return engine.generate({
        promptTokens: prompt,
        params: { ...DEFAULT_SAMPLING, maxTokens: tokens, seed: seed + t * samples + s },
        onToken: () => {
          if (first) firstTokens = Math.max(firstTokens, performance.now() - t0);
          first = false;
        },
      });
    }),
  );
  await Promise.all(sessions);
  const cpu = process.cpuUsage(c0);
  return {
    firstTokensS: round(firstTokens / 1000),
    wallS: round((performance.now() - t0) / 1000),
    cpuS: round((cpu.user + cpu.system) / 1e6),
    evaluated: engine.promptTokens.evaluated - before.evaluated,
    shared: engine.promptTokens.shared - before.shared,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      tasks: { type: "string", default: "2" },
      samples: { type: "string", default: "4" },
      prefix: { type: "string", default: "18500" },
      suffix: { type: "string", default: "450" },
      tokens: { type: "string", default: "64" },
      rounds: { type: "string", default: "2" },
      threads: { type: "string", default: "1" },
      share: { type: "string", default: "1024" },
      shape: { type: "string", default: "qwen3-tiny" },
      out: { type: "string", default: "docs/bench/shared-prefix.json" },
    },
  });
  const [tasks, samples, prefix, suffix, tokens, rounds, threads, share] = [values.tasks, values.samples, values.prefix, values.suffix, values.tokens, values.rounds, values.threads, values.share].map((v) => Math.max(1, Number(v)));
  if ([tasks, samples, prefix, suffix, tokens, rounds, threads, share].some((v) => v === undefined || !Number.isInteger(v))) throw new UserError("invalid_arguments", "bench:shared-prefix options must be positive integers");
  const shape = SHAPES[values.shape];
  if (shape === undefined) throw new UserError("invalid_arguments", `bench:shared-prefix --shape must be one of ${Object.keys(SHAPES).join(", ")}`);
  registerBuiltins();
  const root = mkdtempSync(join(tmpdir(), "hrl-bench-share-"));
  try {
    const dir = join(root, `${values.shape}-shape`);
    writeRandomModelDir(dir, { ...shape.spec, seed: 3 });
    const rand = mulberry32(7);
    const [lo, span] = shape.ids;
    const ids = (n: number): number[] => Array.from({ length: n }, () => lo + Math.floor(rand() * span));
    const system = ids(prefix as number);
    const prompts = Array.from({ length: tasks as number }, () => [...system, ...ids(suffix as number)]);
    const ctx = (prefix as number) + (suffix as number) + (tokens as number) + 64;
    const spec = (share: number): string => `llamacpp:${dir}?threads=${threads}&sequences=${(tasks as number) * (samples as number)}&ctx=${ctx}&share=${share}&cache=${join(root, `cache-${share}`)}`;
    const engines: [string, LlamaCppEngine][] = [
      ["each sequence evaluates its prompt (share=0)", (await createEngine(spec(0))) as LlamaCppEngine],
      [`shared prefixes (share=${share})`, (await createEngine(spec(share as number))) as LlamaCppEngine],
    ];
    const results = engines.map((): RoundResult[] => []);
    try {
      for (let r = 0; r < (rounds as number); r++) {
        const order = r % 2 === 0 ? [0, 1] : [1, 0];
        for (const k of order) {
          const [name, engine] = engines[k] as [string, LlamaCppEngine];
          // A fresh policy version each round, as after every RL step: no sequence holds anything yet.
          await engine.loadPolicy(dir, r + 1);
          const res = await runRound(engine, prompts, samples as number, tokens as number, 1000 * r);
          results[k]?.push(res);
          console.error(`bench:shared-prefix: round ${r + 1}/${rounds} ${name}: first tokens ${res.firstTokensS} s, wall ${res.wallS} s, CPU ${res.cpuS} s, evaluated ${res.evaluated}, shared ${res.shared}`);
        }
      }
    } finally {
      for (const [, e] of engines) await e.close();
    }
    const variants = engines.map(([name], k) => {
      const rs = results[k] ?? [];
      return { variant: name, firstTokensS: median(rs.map((x) => x.firstTokensS)), wallS: median(rs.map((x) => x.wallS)), cpuS: median(rs.map((x) => x.cpuS)), evaluatedPerRound: median(rs.map((x) => x.evaluated)), sharedPerRound: median(rs.map((x) => x.shared)), rounds: rs };
    });
    const [off, on] = variants;
    const result = {
      bench: "shared-prefix",
      date: new Date().toISOString(),
      loadavg: loadavg().map((x) => round(x)),
      shape: { tasks, samples, prefixTokens: prefix, suffixTokens: suffix, sampledTokens: tokens, threadsPerSequence: threads, share, model: shape.label },
      variants,
      ratios: off && on ? { firstTokens: round(off.firstTokensS / on.firstTokensS), wall: round(off.wallS / on.wallS), cpu: round(off.cpuS / on.cpuS) } : null,
    };
    writeBenchResult(values.out, result);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
