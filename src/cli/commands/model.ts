import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { UserError, errorMessage } from "../../core/errors.js";
import { describeModelDir } from "../../model/model-dir.js";
import { MODEL_PRESETS, findPreset } from "../../model/presets.js";
import { createTrainer } from "../../trainer/index.js";
import type { Command } from "../command.js";

const usage = `Usage:
  harnessrl model init --preset <name> [--seed <n>] (--out <dir> | <dir>) [--model-type qwen2|qwen3] [--force] [--json]
  harnessrl model info <dir> [--json]
  harnessrl model presets

init     creates a model directory (config.json, weights, tokenizer files, chat template) with the PyTorch worker;
         every part of harnessrl accepts it. Qwen3 presets write Qwen3's tokenizer and official template and sharded
         weights (model-0000k-of-0000n.safetensors + index). --seed defaults to 0; --force overwrites a model.
info     prints a model directory's architecture, parameter count and harnessrl metadata (no Python needed).
presets  lists the built-in presets.

Presets:
${MODEL_PRESETS.map((p) => `  ${p.name.padEnd(11)} ${p.description} (${p.parameters.toLocaleString("en-US")} parameters)`).join("\n")}`;

type Options = NonNullable<ParseArgsConfig["options"]>;

function parse<T extends Options>(argv: string[], options: T): ReturnType<typeof parseArgs<{ args: string[]; options: T; allowPositionals: true; strict: true }>> {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UserError("invalid_arguments", `${errorMessage(e)}\n\n${usage}`);
  }
}

async function init(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, {
    preset: { type: "string" },
    seed: { type: "string" },
    out: { type: "string" },
    "model-type": { type: "string" },
    force: { type: "boolean" },
    json: { type: "boolean" },
  });
  const preset = typeof values.preset === "string" ? values.preset : undefined;
  const outArg = typeof values.out === "string" ? values.out : positionals.length === 1 ? positionals[0] : undefined;
  const out = outArg !== undefined && (positionals.length === 0 || values.out === undefined) ? resolve(outArg) : undefined;
  if (!preset || !out) throw new UserError("invalid_arguments", `model init needs --preset and one output directory (--out <dir> or <dir>)\n\n${usage}`);
  const seed = typeof values.seed === "string" ? values.seed : "0";
  if (!findPreset(preset)) throw new UserError("unknown_preset", `unknown preset "${preset}" (known: ${MODEL_PRESETS.map((p) => p.name).join(", ")})`);
  if (!/^\d+$/.test(seed) || !Number.isSafeInteger(Number(seed))) throw new UserError("invalid_arguments", `--seed must be a non-negative integer, got "${seed}"`);
  const modelType = values["model-type"];
  if (modelType !== undefined && modelType !== "qwen2" && modelType !== "qwen3") throw new UserError("invalid_arguments", `--model-type must be qwen2 or qwen3`);
  if (existsSync(join(out, "config.json")) && values.force !== true) {
    throw new UserError("model_dir_exists", `${out} already holds a model (config.json); pass --force to overwrite it`);
  }
  const trainer = await createTrainer("torch");
  try {
    const info = await trainer.init({ preset, seed: Number(seed), out, modelType });
    if (values.json === true) console.log(JSON.stringify(info, null, 2));
    else console.log(`created ${out}: preset ${preset}, seed ${seed}, ${info.parameters.toLocaleString("en-US")} parameters (${String(info.config.model_type)}, ${info.dtype}), policy version ${info.policyVersion}`);
  } finally {
    await trainer.close();
  }
  return 0;
}

function info(argv: string[]): number {
  const { values, positionals } = parse(argv, { json: { type: "boolean" } });
  const dir = positionals[0];
  if (!dir || positionals.length > 1) throw new UserError("invalid_arguments", `model info needs exactly one directory\n\n${usage}`);
  const s = describeModelDir(dir);
  if (values.json === true) {
    console.log(JSON.stringify(s, null, 2));
    return 0;
  }
  const c = s.config;
  const lines = [
    `dir              ${s.dir}`,
    `architecture     ${c.modelType}: ${c.numLayers} layers, hidden ${c.hiddenSize}, ffn ${c.intermediateSize}, heads ${c.numHeads} (kv ${c.numKvHeads}, dim ${c.headDim})`,
    `                 ${c.qkNorm ? "q/k norm" : "no q/k norm"}, ${c.attentionBias ? "qkv bias" : "no qkv bias"}, ${c.tieWordEmbeddings ? "tied" : "untied"} embeddings, rope θ ${c.ropeTheta}`,
    `vocab / context  ${c.vocabSize} / ${c.maxPositions}`,
    `parameters       ${s.parameters.toLocaleString("en-US")} in ${s.tensors} tensors (${s.dtypes.join(", ")}), ${s.files.length} file(s)`,
    `tokenizer        ${s.tokenizer}${s.hasChatTemplate ? ", chat template" : ", NO chat template"}`,
    `harnessrl        preset ${s.preset ?? "-"}, seed ${s.seed ?? "-"}, policy version ${s.policyVersion}`,
  ];
  console.log(lines.join("\n"));
  return 0;
}

export const modelCommand: Command = {
  name: "model",
  summary: "create (init) or inspect (info) a model directory",
  usage,
  async run(argv: string[]): Promise<number> {
    const [sub, ...rest] = argv;
    switch (sub) {
      case "init":
        return init(rest);
      case "info":
        return info(rest);
      case "presets":
        for (const p of MODEL_PRESETS) console.log(`${p.name.padEnd(11)} ${p.modelType}  ${p.parameters.toLocaleString("en-US").padStart(10)}  ${p.description}`);
        return 0;
      default:
        throw new UserError("invalid_arguments", `unknown model subcommand "${sub ?? ""}"\n\n${usage}`);
    }
  },
};
