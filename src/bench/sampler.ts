/**
 * `npm run bench:sampler`: what sampling from the whole distribution costs per token on llama.cpp against sampling
 * from the top K (`sampling.top_k`), side by side in one run. node-llama-cpp 3.21.1's llama.cpp sorts every
 * candidate to draw from the whole distribution (and again to report the drawn token's probability), which for
 * Qwen3's 151,936-token vocabulary costs more than a `qwen3-tiny` forward. One engine (8 sequences of one thread,
 * as configs/real-*.yaml), a `qwen3-tiny`-shaped random model with Qwen3's tokenizer (or --model-dir), and per round every variant in turn
 * (order reversed each round, so load hits all alike): `--sequences` sessions at once, each decoding `--tokens`
 * tokens after a short prompt. Reports decode milliseconds per token per sequence (after each session's first
 * token) and process CPU. Writes docs/bench/sampler.json.
 *
 * Options: --top-k 0,40,1000,5000 (the variants; 0 = the whole distribution), --tokens N (128), --sequences N (8),
 * --rounds N (2), --model-dir DIR (a policy directory instead of the random model), --out FILE.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";
import { registerBuiltins } from "../builtins.js";
import { UserError } from "../core/errors.js";
import { createEngine } from "../engine/index.js";
import { DEFAULT_SAMPLING, type SamplingEngine } from "../engine/types.js";
import { qwen3TokenizerFiles } from "../tokenizer/qwen3-data.js";
import { writeRandomModelDir } from "../weights/random-model.js";
import { writeBenchResult } from "./output.js";
import { median } from "./stats.js";

const round = (x: number, digits = 2): number => Number(x.toFixed(digits));

interface RoundResult {
  /** Decode time per token per sequence: (last token − first token) / (tokens − 1), median over the sessions. */
  msPerToken: number;
  wallS: number;
  cpuS: number;
  tokens: number;
}

async function runRound(engine: SamplingEngine, prompt: readonly number[], topK: number, sequences: number, tokens: number, seed: number): Promise<RoundResult> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const perSession = await Promise.all(
    Array.from({ length: sequences }, async (_, s) => {
      let first = 0;
      let last = 0;
      let n = 0;
      await engine.generate({
        promptTokens: prompt,
        params: { ...DEFAULT_SAMPLING, topK, maxTokens: tokens, seed: seed + s },
        onToken: () => {
          last = performance.now();
          if (n++ === 0) first = last;
        },
      });
      return { ms: n > 1 ? (last - first) / (n - 1) : Number.NaN, n };
    }),
  );
  const cpu = process.cpuUsage(c0);
  return {
    msPerToken: round(median(perSession.map((p) => p.ms))),
    wallS: round((performance.now() - t0) / 1000),
    cpuS: round((cpu.user + cpu.system) / 1e6),
    tokens: perSession.reduce((a, p) => a + p.n, 0),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      "top-k": { type: "string", default: "0,40,1000,5000" },
      tokens: { type: "string", default: "128" },
      sequences: { type: "string", default: "8" },
      rounds: { type: "string", default: "2" },
      "model-dir": { type: "string" },
      out: { type: "string", default: "docs/bench/sampler.json" },
    },
  });
  const ks = values["top-k"].split(",").map((v) => Number(v.trim()));
  const [tokens, sequences, rounds] = [values.tokens, values.sequences, values.rounds].map((v) => Number(v));
  if (ks.some((k) => !Number.isInteger(k) || k < 0) || ks.length === 0) throw new UserError("invalid_arguments", "bench:sampler --top-k must be a comma-separated list of integers ≥ 0");
  if ([tokens, sequences, rounds].some((v) => v === undefined || !Number.isInteger(v) || v < 1)) throw new UserError("invalid_arguments", "bench:sampler options must be positive integers");
  registerBuiltins();
  const root = mkdtempSync(join(tmpdir(), "hrl-bench-sampler-"));
  try {
    let dir = values["model-dir"];
    if (dir === undefined) {
      dir = join(root, "qwen3-tiny-shape");
      // Qwen3's own tokenizer and exactly its 151,669 ids as rows, as `qwen3-tiny` has (a byte tokenizer over 151,936
      // rows would mask 151,671 padded rows with a token bias and measure that instead).
      const hfTokenizer = JSON.parse(readFileSync(qwen3TokenizerFiles().tokenizerJson, "utf8")) as Record<string, unknown>;
      writeRandomModelDir(dir, { modelType: "qwen3", hiddenSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 32, intermediateSize: 192, vocabSize: 151_669, maxPositions: 40960, seed: 3, hfTokenizer });
    }
    const engine = await createEngine(`llamacpp:${dir}?threads=1&sequences=${sequences}&ctx=4096&cache=${join(root, "cache")}`);
    const results = ks.map((): RoundResult[] => []);
    try {
      const prompt = engine.tokenizer.encode(engine.renderer.render([{ role: "user", content: "Compute 12 + 30 with the calc tool, then answer with the number." }], [], { addGenerationPrompt: true }));
      for (let r = 0; r < (rounds as number); r++) {
        const order = ks.map((_, i) => i);
        if (r % 2 === 1) order.reverse();
        for (const i of order) {
          const k = ks[i] as number;
          const res = await runRound(engine, prompt, k, sequences as number, tokens as number, 1000 * r);
          results[i]?.push(res);
          console.error(`bench:sampler: round ${r + 1}/${rounds} top_k ${k}: ${res.msPerToken} ms/token per sequence, wall ${res.wallS} s, CPU ${res.cpuS} s, ${res.tokens} tokens`);
        }
      }
    } finally {
      await engine.close();
    }
    const variants = ks.map((k, i) => {
      const rs = results[i] ?? [];
      return { topK: k, msPerToken: median(rs.map((x) => x.msPerToken)), wallS: median(rs.map((x) => x.wallS)), cpuS: median(rs.map((x) => x.cpuS)), rounds: rs };
    });
    const whole = variants.find((v) => v.topK === 0);
    writeBenchResult(values.out, {
      bench: "sampler",
      date: new Date().toISOString(),
      loadavg: loadavg().map((x) => round(x)),
      shape: { model: values["model-dir"] ?? "qwen3-tiny shape (random weights, Qwen3's tokenizer, 151,669 rows)", sequences, tokensPerSequence: tokens, threadsPerSequence: 1 },
      variants,
      // How many times faster each variant decodes than the whole distribution (medians' ratios).
      speedup: whole ? Object.fromEntries(variants.filter((v) => v.topK !== 0).map((v) => [`top_k ${v.topK}`, round(whole.msPerToken / v.msPerToken)])) : null,
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
