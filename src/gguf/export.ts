import { closeSync, openSync, readSync, renameSync, statSync } from "node:fs";
import { basename } from "node:path";
import { UserError } from "../core/errors.js";
import { readModelConfig, type ModelConfig } from "../weights/config.js";
import { readModelTensors, toFloat32, type TensorInfo } from "../weights/safetensors.js";
import { readVocab, vocabMetadata } from "./vocab.js";
import { GgmlType, gguf, writeGguf, type GgufTensor, type GgufValue } from "./writer.js";

/**
 * Exports a harnessrl / Hugging Face Qwen2 or Qwen3 model directory to a GGUF file llama.cpp loads with the `qwen2` /
 * `qwen3` architecture. Both use NeoX-style RoPE like the HF code, so q/k weights are copied unpermuted; 2-D weights
 * keep their dtype (F32/F16/BF16) and stream straight from the safetensors files; 1-D tensors (norms, biases) become
 * F32 as llama.cpp expects.
 */
export interface ExportResult {
  file: string;
  bytes: number;
  config: ModelConfig;
  ms: number;
}

const CHUNK = 16 * 1024 * 1024;

function ggmlTypeOf(t: TensorInfo): GgmlType {
  if (t.shape.length === 1) return GgmlType.F32;
  if (t.dtype === "F32") return GgmlType.F32;
  if (t.dtype === "F16") return GgmlType.F16;
  if (t.dtype === "BF16") return GgmlType.BF16;
  throw new UserError("unsupported_dtype", `tensor ${t.name}: dtype ${t.dtype} is not supported (F32, F16, BF16)`);
}

/** Streams a tensor's bytes from its safetensors file (converting only small 1-D half tensors to F32). */
function sourceTensor(name: string, t: TensorInfo): GgufTensor {
  const type = ggmlTypeOf(t);
  const convert = type === GgmlType.F32 && t.dtype !== "F32";
  return {
    name,
    shape: t.shape,
    type,
    writeData(write) {
      const fd = openSync(t.file, "r");
      try {
        if (convert) {
          const raw = Buffer.allocUnsafe(t.byteLength);
          readSync(fd, raw, 0, t.byteLength, t.offset);
          const f = toFloat32(raw, t.dtype);
          write(new Uint8Array(f.buffer, f.byteOffset, f.byteLength));
          return;
        }
        const buf = Buffer.allocUnsafe(Math.min(CHUNK, t.byteLength));
        let done = 0;
        while (done < t.byteLength) {
          const n = readSync(fd, buf, 0, Math.min(buf.length, t.byteLength - done), t.offset + done);
          if (n <= 0) throw new UserError("invalid_safetensors", `${t.file}: truncated tensor ${t.name}`);
          write(buf.subarray(0, n));
          done += n;
        }
      } finally {
        closeSync(fd);
      }
    },
  };
}

function fileType(tensors: readonly GgufTensor[]): number {
  // general.file_type: 0 all F32, 1 mostly F16, 32 mostly BF16 (taken from the token embedding).
  const t = tensors.find((x) => x.name === "token_embd.weight")?.type;
  return t === GgmlType.F16 ? 1 : t === GgmlType.BF16 ? 32 : 0;
}

/** The GGUF tensors (llama.cpp names) for a model directory's safetensors. */
export function mapTensors(config: ModelConfig, src: ReadonlyMap<string, TensorInfo>): GgufTensor[] {
  const out: GgufTensor[] = [];
  const need = (hf: string, gg: string, shape: number[]): void => {
    const t = src.get(hf);
    if (!t) throw new UserError("tensor_not_found", `weights lack ${hf}`);
    if (t.shape.join("x") !== shape.join("x")) throw new UserError("invalid_tensor", `${hf}: shape ${t.shape.join("x")}, expected ${shape.join("x")}`);
    out.push(sourceTensor(gg, t));
  };
  const { hiddenSize: h, numHeads, numKvHeads, headDim, intermediateSize: ff, vocabSize } = config;
  need("model.embed_tokens.weight", "token_embd.weight", [vocabSize, h]);
  for (let i = 0; i < config.numLayers; i++) {
    const p = `model.layers.${i}`;
    const b = `blk.${i}`;
    need(`${p}.input_layernorm.weight`, `${b}.attn_norm.weight`, [h]);
    need(`${p}.self_attn.q_proj.weight`, `${b}.attn_q.weight`, [numHeads * headDim, h]);
    need(`${p}.self_attn.k_proj.weight`, `${b}.attn_k.weight`, [numKvHeads * headDim, h]);
    need(`${p}.self_attn.v_proj.weight`, `${b}.attn_v.weight`, [numKvHeads * headDim, h]);
    const hasBias = src.has(`${p}.self_attn.q_proj.bias`);
    if (config.modelType === "qwen2" && !hasBias) throw new UserError("unsupported_model", `${p}: qwen2 needs q/k/v biases (llama.cpp requires them)`);
    if (config.modelType === "qwen3" && hasBias) throw new UserError("unsupported_model", `${p}: llama.cpp's qwen3 has no q/k/v biases`);
    if (hasBias) {
      need(`${p}.self_attn.q_proj.bias`, `${b}.attn_q.bias`, [numHeads * headDim]);
      need(`${p}.self_attn.k_proj.bias`, `${b}.attn_k.bias`, [numKvHeads * headDim]);
      need(`${p}.self_attn.v_proj.bias`, `${b}.attn_v.bias`, [numKvHeads * headDim]);
    }
    if (config.qkNorm) {
      need(`${p}.self_attn.q_norm.weight`, `${b}.attn_q_norm.weight`, [headDim]);
      need(`${p}.self_attn.k_norm.weight`, `${b}.attn_k_norm.weight`, [headDim]);
    }
    need(`${p}.self_attn.o_proj.weight`, `${b}.attn_output.weight`, [h, numHeads * headDim]);
    need(`${p}.post_attention_layernorm.weight`, `${b}.ffn_norm.weight`, [h]);
    need(`${p}.mlp.gate_proj.weight`, `${b}.ffn_gate.weight`, [ff, h]);
    need(`${p}.mlp.up_proj.weight`, `${b}.ffn_up.weight`, [ff, h]);
    need(`${p}.mlp.down_proj.weight`, `${b}.ffn_down.weight`, [h, ff]);
  }
  need("model.norm.weight", "output_norm.weight", [h]);
  // Tied embeddings: llama.cpp reuses token_embd when `output` is absent.
  if (!config.tieWordEmbeddings || src.has("lm_head.weight")) {
    if (src.has("lm_head.weight")) need("lm_head.weight", "output.weight", [vocabSize, h]);
    else throw new UserError("tensor_not_found", "weights lack lm_head.weight and tie_word_embeddings is false");
  }
  return out;
}

export function architectureMetadata(config: ModelConfig, name: string, contextLength: number): [string, GgufValue][] {
  const a = config.modelType;
  return [
    ["general.architecture", gguf.str(a)],
    ["general.name", gguf.str(name)],
    [`${a}.context_length`, gguf.u32(contextLength)],
    [`${a}.embedding_length`, gguf.u32(config.hiddenSize)],
    [`${a}.block_count`, gguf.u32(config.numLayers)],
    [`${a}.feed_forward_length`, gguf.u32(config.intermediateSize)],
    [`${a}.attention.head_count`, gguf.u32(config.numHeads)],
    [`${a}.attention.head_count_kv`, gguf.u32(config.numKvHeads)],
    [`${a}.attention.key_length`, gguf.u32(config.headDim)],
    [`${a}.attention.value_length`, gguf.u32(config.headDim)],
    [`${a}.rope.freq_base`, gguf.f32(config.ropeTheta)],
    [`${a}.attention.layer_norm_rms_epsilon`, gguf.f32(config.rmsNormEps)],
  ];
}

/** Writes `outFile` (atomically: a temp file renamed into place) from a model directory. */
export function exportGguf(modelDir: string, outFile: string): ExportResult {
  const t0 = performance.now();
  const config = readModelConfig(modelDir);
  const tensors = mapTensors(config, readModelTensors(modelDir));
  const vocab = readVocab(modelDir, config.vocabSize);
  const metadata = new Map<string, GgufValue>([
    ...architectureMetadata(config, basename(modelDir), config.maxPositions),
    ["general.file_type", gguf.u32(fileType(tensors))],
    ...vocabMetadata(vocab),
  ]);
  const tmp = `${outFile}.${process.pid}.tmp`;
  writeGguf(tmp, metadata, tensors);
  renameSync(tmp, outFile);
  return { file: outFile, bytes: statSync(outFile).size, config, ms: performance.now() - t0 };
}
