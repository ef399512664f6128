import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { UserError } from "../core/errors.js";
import { readTokenizerConfig } from "../tokenizer/load.js";
import { readModelConfig, type ModelConfig } from "../weights/config.js";
import { readModelTensors } from "../weights/safetensors.js";

/** What `harnessrl model info` reports about a model directory, read from its files without loading weights. */
export interface ModelDirSummary {
  dir: string;
  config: ModelConfig;
  /** Elements over all stored tensors (a tied head is stored once). */
  parameters: number;
  tensors: number;
  /** Stored dtypes, e.g. ["F32"] or ["BF16"]. */
  dtypes: string[];
  files: string[];
  preset: string | undefined;
  seed: number | undefined;
  policyVersion: number;
  tokenizer: "bytes" | "hf";
  hasChatTemplate: boolean;
}

const metaSchema = z.object({
  harnessrl: z.object({ preset: z.string().nullish(), seed: z.number().int().nullish(), policy_version: z.number().int().nullish() }).loose().nullish(),
}).loose();

/** The `"harnessrl"` block of config.json (absent in real checkpoints). */
export function readHarnessrlMeta(dir: string): { preset: string | undefined; seed: number | undefined; policyVersion: number } {
  const r = metaSchema.safeParse(JSON.parse(readFileSync(join(dir, "config.json"), "utf8")));
  const m = r.success ? r.data.harnessrl : undefined;
  return { preset: m?.preset ?? undefined, seed: m?.seed ?? undefined, policyVersion: m?.policy_version ?? 0 };
}

export function describeModelDir(dir: string): ModelDirSummary {
  const abs = resolve(dir);
  if (!existsSync(abs)) throw new UserError("model_dir_not_found", `model directory ${abs} does not exist`);
  const config = readModelConfig(abs);
  const tensors = readModelTensors(abs);
  let parameters = 0;
  const dtypes = new Set<string>();
  const files = new Set<string>();
  for (const t of tensors.values()) {
    parameters += t.shape.reduce((a, b) => a * b, 1);
    dtypes.add(t.dtype);
    files.add(t.file);
  }
  const tok = readTokenizerConfig(abs);
  const meta = readHarnessrlMeta(abs);
  return {
    dir: abs,
    config,
    parameters,
    tensors: tensors.size,
    dtypes: [...dtypes].sort(),
    files: [...files].sort(),
    preset: meta.preset,
    seed: meta.seed,
    policyVersion: meta.policyVersion,
    tokenizer: tok.harnessrl_tokenizer === "bytes" ? "bytes" : "hf",
    hasChatTemplate: tok.chat_template !== undefined,
  };
}
