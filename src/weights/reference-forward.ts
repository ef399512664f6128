import type { ModelConfig } from "./config.js";
import { readModelConfig } from "./config.js";
import { readModelTensors, readTensorF32 } from "./safetensors.js";
import { UserError } from "../core/errors.js";
import { loadTokenizer } from "../tokenizer/load.js";
import { textlessIds } from "../tokenizer/textless.js";

/**
 * A plain TypeScript (float64 accumulation) forward pass of the Qwen2/Qwen3 decoder, written from the Hugging Face
 * definition. It is slow and only meant for small models: it is the independent reference that checks the GGUF
 * export (layout, RoPE style, norms) and stands in for the PyTorch worker in consistency checks when that is absent.
 */
export interface ReferenceModel {
  config: ModelConfig;
  /**
   * Teacher-forced log-probabilities: out[i] = log p(tokens[i+1] | tokens[..i]) at the given temperature, over the
   * ids with text in the directory's tokenizer (padded rows excluded, as the engines sample: textless.ts).
   */
  logprobs(tokens: readonly number[], temperature?: number): number[];
}

export function loadReferenceModel(modelDir: string): ReferenceModel {
  const config = readModelConfig(modelDir);
  const src = readModelTensors(modelDir);
  const w = (name: string): Float32Array => {
    const t = src.get(name);
    if (!t) throw new UserError("tensor_not_found", `reference forward: missing ${name}`);
    return readTensorF32(t);
  };
  const embed = w("model.embed_tokens.weight");
  const lmHead = src.has("lm_head.weight") ? w("lm_head.weight") : embed;
  const textless = textlessIds(loadTokenizer(modelDir), config.vocabSize);
  const layers = Array.from({ length: config.numLayers }, (_, i) => {
    const p = `model.layers.${i}`;
    const opt = (n: string): Float32Array | undefined => (src.has(n) ? w(n) : undefined);
    return {
      inNorm: w(`${p}.input_layernorm.weight`),
      q: w(`${p}.self_attn.q_proj.weight`),
      k: w(`${p}.self_attn.k_proj.weight`),
      v: w(`${p}.self_attn.v_proj.weight`),
      qb: opt(`${p}.self_attn.q_proj.bias`),
      kb: opt(`${p}.self_attn.k_proj.bias`),
      vb: opt(`${p}.self_attn.v_proj.bias`),
      qn: opt(`${p}.self_attn.q_norm.weight`),
      kn: opt(`${p}.self_attn.k_norm.weight`),
      o: w(`${p}.self_attn.o_proj.weight`),
      postNorm: w(`${p}.post_attention_layernorm.weight`),
      gate: w(`${p}.mlp.gate_proj.weight`),
      up: w(`${p}.mlp.up_proj.weight`),
      down: w(`${p}.mlp.down_proj.weight`),
    };
  });
  const finalNorm = w("model.norm.weight");
  const { hiddenSize: H, numHeads, numKvHeads, headDim: D, intermediateSize: F, vocabSize: V, rmsNormEps: eps } = config;

  const matvec = (m: Float32Array, x: Float64Array, rows: number, cols: number, bias?: Float32Array): Float64Array => {
    const out = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let s = bias ? (bias[r] ?? 0) : 0;
      const off = r * cols;
      for (let c = 0; c < cols; c++) s += (m[off + c] ?? 0) * (x[c] ?? 0);
      out[r] = s;
    }
    return out;
  };
  const rmsnorm = (x: Float64Array, g: Float32Array, start = 0, n = x.length): void => {
    let ss = 0;
    for (let i = 0; i < n; i++) ss += (x[start + i] ?? 0) ** 2;
    const inv = 1 / Math.sqrt(ss / n + eps);
    for (let i = 0; i < n; i++) x[start + i] = (x[start + i] ?? 0) * inv * (g[i] ?? 0);
  };
  const rope = (x: Float64Array, heads: number, pos: number): void => {
    const half = D / 2;
    for (let h = 0; h < heads; h++) {
      const b = h * D;
      for (let i = 0; i < half; i++) {
        const ang = pos / config.ropeTheta ** ((2 * i) / D);
        const c = Math.cos(ang);
        const s = Math.sin(ang);
        const x1 = x[b + i] ?? 0;
        const x2 = x[b + i + half] ?? 0;
        x[b + i] = x1 * c - x2 * s;
        x[b + i + half] = x2 * c + x1 * s;
      }
    }
  };

  return {
    config,
    logprobs(tokens, temperature = 1) {
      const kCache = layers.map(() => [] as Float64Array[]);
      const vCache = layers.map(() => [] as Float64Array[]);
      const out: number[] = [];
      for (let pos = 0; pos < tokens.length; pos++) {
        const tok = tokens[pos] ?? 0;
        const x = new Float64Array(H);
        for (let i = 0; i < H; i++) x[i] = embed[tok * H + i] ?? 0;
        layers.forEach((L, li) => {
          const hN = Float64Array.from(x);
          rmsnorm(hN, L.inNorm);
          const q = matvec(L.q, hN, numHeads * D, H, L.qb);
          const k = matvec(L.k, hN, numKvHeads * D, H, L.kb);
          const v = matvec(L.v, hN, numKvHeads * D, H, L.vb);
          if (L.qn && L.kn) {
            for (let h = 0; h < numHeads; h++) rmsnorm(q, L.qn, h * D, D);
            for (let h = 0; h < numKvHeads; h++) rmsnorm(k, L.kn, h * D, D);
          }
          rope(q, numHeads, pos);
          rope(k, numKvHeads, pos);
          const ks = kCache[li] as Float64Array[];
          const vs = vCache[li] as Float64Array[];
          ks.push(k);
          vs.push(v);
          const att = new Float64Array(numHeads * D);
          const group = numHeads / numKvHeads;
          for (let h = 0; h < numHeads; h++) {
            const kvh = Math.floor(h / group);
            const scores = ks.map((kk) => {
              let s = 0;
              for (let d = 0; d < D; d++) s += (q[h * D + d] ?? 0) * (kk[kvh * D + d] ?? 0);
              return s / Math.sqrt(D);
            });
            const m = Math.max(...scores);
            const e = scores.map((s) => Math.exp(s - m));
            const z = e.reduce((a, b) => a + b, 0);
            e.forEach((p, j) => {
              const vv = vs[j] as Float64Array;
              for (let d = 0; d < D; d++) att[h * D + d] = (att[h * D + d] ?? 0) + (p / z) * (vv[kvh * D + d] ?? 0);
            });
          }
          const o = matvec(L.o, att, H, numHeads * D);
          for (let i = 0; i < H; i++) x[i] = (x[i] ?? 0) + (o[i] ?? 0);
          const h2 = Float64Array.from(x);
          rmsnorm(h2, L.postNorm);
          const g = matvec(L.gate, h2, F, H);
          const u = matvec(L.up, h2, F, H);
          for (let i = 0; i < F; i++) {
            const gi = g[i] ?? 0;
            g[i] = (gi / (1 + Math.exp(-gi))) * (u[i] ?? 0);
          }
          const dn = matvec(L.down, g, H, F);
          for (let i = 0; i < H; i++) x[i] = (x[i] ?? 0) + (dn[i] ?? 0);
        });
        if (pos + 1 >= tokens.length) break;
        rmsnorm(x, finalNorm);
        const logits = matvec(lmHead, x, V, H);
        for (let i = 0; i < V; i++) logits[i] = (logits[i] ?? 0) / temperature;
        for (const id of textless) logits[id] = -Infinity;
        let m = -Infinity;
        for (const l of logits) m = Math.max(m, l);
        let z = 0;
        for (const l of logits) z += Math.exp(l - m);
        out.push((logits[tokens[pos + 1] ?? 0] ?? 0) - m - Math.log(z));
      }
      return out;
    },
  };
}
