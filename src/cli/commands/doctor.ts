import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { UserError, errorMessage } from "../../core/errors.js";
import { createEngine } from "../../engine/index.js";
import { checkConsistency, referenceScorer, workerScorer, type Scorer } from "../../train/consistency.js";
import { createTrainer } from "../../trainer/index.js";
import type { Trainer } from "../../trainer/types.js";
import { intOption } from "../args.js";
import type { Command } from "../command.js";

const usage = `Usage:
  harnessrl doctor consistency --model <dir> [--tokens 1000] [--temperature 1] [--top-k 0] [--scorer worker|reference]
                               [--max-delta 1e-3] [--threads N] [--batch isolated|shared] [--kv f32|f16]
                               [--fa 0|1] [--json]

consistency  samples ≥ --tokens tokens with the llama.cpp engine (GGUF exported from <dir>; 8 concurrent sequences,
             --batch, --kv and --fa as in the engine spec), teacher-forces the same sequences with the PyTorch
             worker (--scorer worker, float32) or the TypeScript reference forward (--scorer reference, slow), and reports mean / max
             |Δ logprob|. Exits 1 if max > --max-delta. With --top-k K the engine samples from the K most likely
             tokens (as sampling.top_k does in a run) and reports probabilities renormalised over them, so Δ is
             −log of their share: the mass that setting leaves out for this policy.`;

function num(name: string, v: string | undefined, fallback: number, min: number): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new UserError("invalid_arguments", `--${name} must be a number ≥ ${min}, got "${v}"`);
  return n;
}

async function consistency(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        model: { type: "string" },
        tokens: { type: "string" },
        temperature: { type: "string" },
        "top-k": { type: "string" },
        scorer: { type: "string" },
        "max-delta": { type: "string" },
        threads: { type: "string" },
        batch: { type: "string" },
        kv: { type: "string" },
        fa: { type: "string" },
        json: { type: "boolean" },
      },
      strict: true,
    }));
  } catch (e) {
    throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
  }
  if (!values.model) throw new UserError("invalid_arguments", `doctor consistency needs --model <dir>\n\n${usage}`);
  const dir = resolve(values.model);
  const tokens = Math.floor(num("tokens", values.tokens, 1000, 1));
  const temperature = num("temperature", values.temperature, 1, 1e-3);
  const maxDelta = num("max-delta", values["max-delta"], 1e-3, 0);
  const topK = intOption("top-k", values["top-k"], 0, 0);
  const threads = Math.floor(num("threads", values.threads, 1, 1));
  const scorerName = values.scorer ?? "worker";
  if (scorerName !== "worker" && scorerName !== "reference") throw new UserError("invalid_arguments", `--scorer must be worker or reference`);
  const batch = values.batch ?? "";
  if (batch !== "" && batch !== "isolated" && batch !== "shared") throw new UserError("invalid_arguments", `--batch must be isolated or shared`);

  const kv = values.kv ?? "f32";
  if (kv !== "f32" && kv !== "f16") throw new UserError("invalid_arguments", `--kv must be f32 or f16`);
  const fa = values.fa ?? "0";
  if (fa !== "0" && fa !== "1") throw new UserError("invalid_arguments", `--fa must be 0 or 1`);

  const engine = await createEngine(`llamacpp:${dir}?threads=${threads}&sequences=8&kv=${kv}&fa=${fa}${batch ? `&batch=${batch}` : ""}`);
  let trainer: Trainer | undefined;
  try {
    let scorer: Scorer;
    if (scorerName === "worker") {
      trainer = await createTrainer("torch");
      await trainer.load(dir, { dtype: "float32", attention: "eager" });
      scorer = workerScorer(trainer);
    } else scorer = referenceScorer(dir);
    const report = await checkConsistency(engine, scorer, { tokens, temperature, topK });
    const ok = report.maxAbsDelta <= maxDelta;
    if (values.json === true) console.log(JSON.stringify({ model: dir, scorer: scorerName, batch: batch || "default", kv, fa: fa === "1", maxAllowed: maxDelta, ok, topK, ...report }, null, 2));
    else {
      console.log(
        [
          `model       ${dir}`,
          `compared    llama.cpp sampling logprobs vs ${scorerName === "worker" ? "PyTorch worker (float32)" : "TypeScript reference forward"} teacher forcing`,
          `engine      KV cache ${kv}, flash attention ${fa === "1" ? "on" : "off"}`,
          `tokens      ${report.tokens} in ${report.sequences} sequences at temperature ${temperature}${topK > 0 ? `, from the top ${topK}` : ""}`,
          `|Δ logprob| mean ${report.meanAbsDelta.toExponential(2)}, max ${report.maxAbsDelta.toExponential(2)} (allowed ${maxDelta}); mean Δ ${report.meanDelta.toExponential(2)}`,
          ...(topK > 0 ? [`top-k       the engine's logprobs are over the top ${topK}: mean Δ ${report.meanDelta.toExponential(2)} ≈ the mass left out per token`] : []),
          `time        sampling ${report.samplingMs.toFixed(0)} ms, scoring ${report.scoringMs.toFixed(0)} ms`,
          ok ? "OK" : "FAIL: llama.cpp and the trainer disagree more than allowed",
        ].join("\n"),
      );
    }
    return ok ? 0 : 1;
  } finally {
    await trainer?.close();
    await engine.close();
  }
}

export const doctorCommand: Command = {
  name: "doctor",
  summary: "checks: training–inference logprob consistency of llama.cpp vs the trainer",
  usage,
  async run(argv) {
    const [sub, ...rest] = argv;
    if (sub === "consistency") return consistency(rest);
    throw new UserError("invalid_arguments", `unknown doctor check "${sub ?? ""}"\n\n${usage}`);
  },
};
