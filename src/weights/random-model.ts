import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defaultTemplateSource } from "../chat/codec.js";
import { writeSafetensors, type TensorToWrite } from "./safetensors.js";

/**
 * Writes a model directory (docs/model-dir.md) with random float32 weights from TypeScript. Used by engine tests and
 * benchmarks so they do not depend on the PyTorch worker; `harnessrl model init` is the user-facing way to make one.
 */
export interface RandomModelSpec {
  modelType: "qwen2" | "qwen3";
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  intermediateSize: number;
  headDim?: number;
  tieWordEmbeddings?: boolean;
  seed: number;
  /** Standard deviation of the weights; larger values make sharper (more peaked) distributions. */
  std?: number;
  policyVersion?: number;
  /** A Hugging Face tokenizer.json to write instead of the tiny byte tokenizer (then `vocabSize` is required). */
  hfTokenizer?: Record<string, unknown>;
  /** config.json vocab_size (≥ the tokenizer's ids; real Qwen checkpoints pad it). Default: the byte tokenizer's 265. */
  vocabSize?: number;
  /** config.json max_position_embeddings (default 8192). */
  maxPositions?: number;
}

export const TINY_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"];
export const TINY_VOCAB = 256 + TINY_SPECIALS.length;

/** mulberry32 + Box–Muller: deterministic normal samples without dependencies. */
function gaussian(seed: number): () => number {
  let a = seed >>> 0;
  const uniform = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(uniform() + 1e-12)) * Math.cos(2 * Math.PI * uniform());
}

export function writeRandomModelDir(dir: string, spec: RandomModelSpec): void {
  mkdirSync(dir, { recursive: true });
  const headDim = spec.headDim ?? spec.hiddenSize / spec.numHeads;
  const tie = spec.tieWordEmbeddings ?? true;
  const rand = gaussian(spec.seed);
  const std = spec.std ?? 0.08;
  const tensors: TensorToWrite[] = [];
  const add = (name: string, shape: number[], fill: "normal" | "ones" | "zeros" | "near-ones"): void => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = fill === "normal" ? rand() * std : fill === "ones" ? 1 : fill === "near-ones" ? 1 + rand() * 0.1 : rand() * 0.02;
    tensors.push({ name, dtype: "F32", shape, data });
  };
  const h = spec.hiddenSize;
  const vocab = spec.vocabSize ?? TINY_VOCAB;
  add("model.embed_tokens.weight", [vocab, h], "normal");
  for (let i = 0; i < spec.numLayers; i++) {
    const p = `model.layers.${i}`;
    add(`${p}.input_layernorm.weight`, [h], "near-ones");
    add(`${p}.self_attn.q_proj.weight`, [spec.numHeads * headDim, h], "normal");
    add(`${p}.self_attn.k_proj.weight`, [spec.numKvHeads * headDim, h], "normal");
    add(`${p}.self_attn.v_proj.weight`, [spec.numKvHeads * headDim, h], "normal");
    if (spec.modelType === "qwen2") {
      add(`${p}.self_attn.q_proj.bias`, [spec.numHeads * headDim], "zeros");
      add(`${p}.self_attn.k_proj.bias`, [spec.numKvHeads * headDim], "zeros");
      add(`${p}.self_attn.v_proj.bias`, [spec.numKvHeads * headDim], "zeros");
    } else {
      add(`${p}.self_attn.q_norm.weight`, [headDim], "near-ones");
      add(`${p}.self_attn.k_norm.weight`, [headDim], "near-ones");
    }
    add(`${p}.self_attn.o_proj.weight`, [h, spec.numHeads * headDim], "normal");
    add(`${p}.post_attention_layernorm.weight`, [h], "near-ones");
    add(`${p}.mlp.gate_proj.weight`, [spec.intermediateSize, h], "normal");
    add(`${p}.mlp.up_proj.weight`, [spec.intermediateSize, h], "normal");
    add(`${p}.mlp.down_proj.weight`, [h, spec.intermediateSize], "normal");
  }
  add("model.norm.weight", [h], "near-ones");
  if (!tie) add("lm_head.weight", [vocab, h], "normal");
  writeSafetensors(join(dir, "model.safetensors"), tensors, { format: "pt" });
  const config = {
    architectures: [spec.modelType === "qwen2" ? "Qwen2ForCausalLM" : "Qwen3ForCausalLM"],
    model_type: spec.modelType,
    vocab_size: vocab,
    hidden_size: h,
    intermediate_size: spec.intermediateSize,
    num_hidden_layers: spec.numLayers,
    num_attention_heads: spec.numHeads,
    num_key_value_heads: spec.numKvHeads,
    head_dim: headDim,
    rms_norm_eps: 1e-6,
    rope_theta: 1_000_000,
    max_position_embeddings: spec.maxPositions ?? 8192,
    tie_word_embeddings: tie,
    attention_bias: spec.modelType === "qwen2",
    torch_dtype: "float32",
    ...(spec.hfTokenizer ? {} : { bos_token_id: 256, eos_token_id: 258 }),
    harnessrl: { preset: "random", seed: spec.seed, policy_version: spec.policyVersion ?? 0 },
  };
  writeFileSync(join(dir, "config.json"), JSON.stringify(config, null, 2));
  if (spec.hfTokenizer) {
    writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(spec.hfTokenizer));
    writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify({ eos_token: "<|im_end|>", chat_template: defaultTemplateSource() }, null, 2));
    return;
  }
  writeFileSync(join(dir, "tokenizer.json"), JSON.stringify({ harnessrl: { type: "bytes", special_tokens: TINY_SPECIALS } }));
  writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify({ harnessrl_tokenizer: "bytes", eos_token: "<|im_end|>", chat_template: defaultTemplateSource() }, null, 2));
}
