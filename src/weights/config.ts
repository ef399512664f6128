import { readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { UserError } from "../core/errors.js";

/** The fields of a Hugging Face Qwen2/Qwen3 `config.json` that the exporter and reference forward need. */
const configSchema = z.object({
  model_type: z.enum(["qwen2", "qwen3"]),
  vocab_size: z.number().int().positive(),
  hidden_size: z.number().int().positive(),
  intermediate_size: z.number().int().positive(),
  num_hidden_layers: z.number().int().positive(),
  num_attention_heads: z.number().int().positive(),
  num_key_value_heads: z.number().int().positive().optional(),
  head_dim: z.number().int().positive().nullish(),
  rms_norm_eps: z.number().positive(),
  rope_theta: z.number().positive().default(10000),
  max_position_embeddings: z.number().int().positive(),
  tie_word_embeddings: z.boolean().default(false),
  attention_bias: z.boolean().optional(),
  torch_dtype: z.string().optional(),
  harnessrl: z.object({ preset: z.string().optional(), seed: z.number().optional(), policy_version: z.number().optional() }).passthrough().optional(),
});

export interface ModelConfig {
  modelType: "qwen2" | "qwen3";
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  maxPositions: number;
  tieWordEmbeddings: boolean;
  /** qkv projections carry biases (always for qwen2, `attention_bias` for qwen3). */
  attentionBias: boolean;
  /** Per-head RMSNorm on q and k (qwen3). */
  qkNorm: boolean;
  policyVersion: number | undefined;
}

export function parseModelConfig(raw: unknown, where = "config.json"): ModelConfig {
  const r = configSchema.safeParse(raw);
  if (!r.success) throw new UserError("invalid_model_config", `${where}: ${r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  const c = r.data;
  return {
    modelType: c.model_type,
    vocabSize: c.vocab_size,
    hiddenSize: c.hidden_size,
    intermediateSize: c.intermediate_size,
    numLayers: c.num_hidden_layers,
    numHeads: c.num_attention_heads,
    numKvHeads: c.num_key_value_heads ?? c.num_attention_heads,
    headDim: c.head_dim ?? c.hidden_size / c.num_attention_heads,
    rmsNormEps: c.rms_norm_eps,
    ropeTheta: c.rope_theta,
    maxPositions: c.max_position_embeddings,
    tieWordEmbeddings: c.tie_word_embeddings,
    attentionBias: c.model_type === "qwen2" ? (c.attention_bias ?? true) : (c.attention_bias ?? false),
    qkNorm: c.model_type === "qwen3",
    policyVersion: c.harnessrl?.policy_version,
  };
}

export function readModelConfig(modelDir: string): ModelConfig {
  const path = join(modelDir, "config.json");
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new UserError("invalid_model_config", `cannot read ${path}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  return parseModelConfig(raw, path);
}
