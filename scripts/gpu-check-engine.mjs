#!/usr/bin/env node
// scripts/gpu-check.sh's remote-engine stage: a real vLLM / SGLang server (started by the script) samples with its
// logprobs through our adapter, the torch worker on the GPU teacher-forces the same tokens, and the mean / max
// |Δ logprob| are printed as one JSON line. Usage: node scripts/gpu-check-engine.mjs <engine spec> <model dir> [tokens]
import { registerBuiltins } from "../dist/builtins.js";
import { createEngine } from "../dist/engine/index.js";
import { checkConsistency, workerScorer } from "../dist/train/consistency.js";
import { createTrainer } from "../dist/trainer/index.js";

const [spec, modelDir, tokens = "400"] = process.argv.slice(2);
if (!spec || !modelDir) {
  console.error("usage: node scripts/gpu-check-engine.mjs <engine spec> <model dir> [tokens]");
  process.exit(2);
}
registerBuiltins();
const engine = await createEngine(spec); // the spec carries ?model_dir= (tokenizer + chat template)
const trainer = await createTrainer("torch", { device: "cuda", threads: 1 });
try {
  await trainer.load(modelDir, { dtype: "float32" });
  const report = await checkConsistency(engine, workerScorer(trainer), { tokens: Number(tokens), temperature: 1 });
  console.log(JSON.stringify({ spec, tokens: report.tokens, sequences: report.sequences, meanAbsDelta: report.meanAbsDelta, maxAbsDelta: report.maxAbsDelta }));
} finally {
  await trainer.close();
  await engine.close();
}
