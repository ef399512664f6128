"""Shared test fixtures: small configs and HF-named checkpoints written independently of the model code."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import torch

from harnessrl_worker import safetensors as st
from harnessrl_worker.config import ModelConfig


def small_config(model_type: str = "qwen3", tied: bool = True, heads: int = 4, kv_heads: int = 2, head_dim: int = 8, vocab: int = 61) -> ModelConfig:
    return ModelConfig(
        model_type=model_type,
        vocab_size=vocab,
        hidden_size=24,
        intermediate_size=40,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        rope_theta=10000.0,
        max_position_embeddings=512,
        tie_word_embeddings=tied,
    ).validate()


def hf_tensor_shapes(model_type: str, hf: Dict[str, Any]) -> List[Tuple[str, Tuple[int, ...]]]:
    """Parameter names and shapes as the HF reference modeling code names them, derived from config.json alone."""
    h, nh = hf["hidden_size"], hf["num_attention_heads"]
    nkv, hd = hf["num_key_value_heads"], hf.get("head_dim", h // nh)
    inter, vocab = hf["intermediate_size"], hf["vocab_size"]
    out: List[Tuple[str, Tuple[int, ...]]] = [("model.embed_tokens.weight", (vocab, h)), ("model.norm.weight", (h,))]
    for i in range(hf["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [
            (p + "self_attn.q_proj.weight", (nh * hd, h)),
            (p + "self_attn.k_proj.weight", (nkv * hd, h)),
            (p + "self_attn.v_proj.weight", (nkv * hd, h)),
            (p + "self_attn.o_proj.weight", (h, nh * hd)),
            (p + "mlp.gate_proj.weight", (inter, h)),
            (p + "mlp.up_proj.weight", (inter, h)),
            (p + "mlp.down_proj.weight", (h, inter)),
            (p + "input_layernorm.weight", (h,)),
            (p + "post_attention_layernorm.weight", (h,)),
        ]
        if model_type == "qwen2" or hf.get("attention_bias"):
            out += [(p + "self_attn.q_proj.bias", (nh * hd,)), (p + "self_attn.k_proj.bias", (nkv * hd,)), (p + "self_attn.v_proj.bias", (nkv * hd,))]
        if model_type == "qwen3" and hf.get("attention_bias"):
            out.append((p + "self_attn.o_proj.bias", (h,)))
        if model_type == "qwen3":
            out += [(p + "self_attn.q_norm.weight", (hd,)), (p + "self_attn.k_norm.weight", (hd,))]
    if not hf.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", (vocab, h)))
    return out


def write_hf_checkpoint(directory: Path, model_type: str, hf: Dict[str, Any], seed: int, shards: int = 1, dtype: torch.dtype = torch.float32) -> Dict[str, torch.Tensor]:
    """A random checkpoint in HF naming (optionally sharded with an index) plus config.json; returns the tensors."""
    directory.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(seed)
    tensors = {name: (torch.randn(shape, generator=gen) * 0.2 + (1.0 if name.endswith("norm.weight") else 0.0)).to(dtype) for name, shape in hf_tensor_shapes(model_type, hf)}
    (directory / "config.json").write_text(json.dumps({"model_type": model_type, **hf}))
    if shards == 1:
        st.save_file(tensors, directory / "model.safetensors")
    else:
        names = sorted(tensors)
        weight_map: Dict[str, str] = {}
        for s in range(shards):
            file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
            part = {n: tensors[n] for n in names[s::shards]}
            st.save_file(part, directory / file)
            weight_map.update({n: file for n in part})
        (directory / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return tensors


# Shaped like the real Qwen2.5-0.5B-Instruct / Qwen3-0.6B config.json files, scaled down; extra fields on purpose.
QWEN2_HF: Dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 5,
    "eos_token_id": 6,
    "hidden_act": "silu",
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 48,
    "max_position_embeddings": 1024,
    "max_window_layers": 21,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 1024,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 70,
}
QWEN3_HF: Dict[str, Any] = {
    "architectures": ["Qwen3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 5,
    "eos_token_id": 6,
    "head_dim": 16,
    "hidden_act": "silu",
    "hidden_size": 32,
    "initializer_range": 0.02,
    "intermediate_size": 48,
    "max_position_embeddings": 1024,
    "max_window_layers": 28,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 70,
}


def reference_logits(t: Dict[str, torch.Tensor], model_type: str, hf: Dict[str, Any], ids: List[int]) -> torch.Tensor:
    """A deliberately naive causal forward (loops over heads and positions) from raw HF tensors, for cross-checking."""
    h, nh = hf["hidden_size"], hf["num_attention_heads"]
    nkv, hd = hf["num_key_value_heads"], hf.get("head_dim", h // nh)
    eps, theta = hf["rms_norm_eps"], float(hf["rope_theta"])
    t = {k: v.double() for k, v in t.items()}

    def rms(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return w * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)

    def rope(x: torch.Tensor, pos: int) -> torch.Tensor:
        half = hd // 2
        out = x.clone()
        for j in range(half):
            ang = pos / theta ** (2 * j / hd)
            c, s = torch.cos(torch.tensor(ang, dtype=torch.float64)), torch.sin(torch.tensor(ang, dtype=torch.float64))
            out[j] = x[j] * c - x[j + half] * s
            out[j + half] = x[j + half] * c + x[j] * s
        return out

    def lin(x: torch.Tensor, name: str) -> torch.Tensor:
        y = x @ t[name + ".weight"].T
        return y + t[name + ".bias"] if name + ".bias" in t else y

    x = t["model.embed_tokens.weight"][ids]
    n = len(ids)
    for i in range(hf["num_hidden_layers"]):
        p = f"model.layers.{i}."
        a = rms(x, t[p + "input_layernorm.weight"])
        q = lin(a, p + "self_attn.q_proj").view(n, nh, hd)
        k = lin(a, p + "self_attn.k_proj").view(n, nkv, hd)
        v = lin(a, p + "self_attn.v_proj").view(n, nkv, hd)
        if model_type == "qwen3":
            q = rms(q, t[p + "self_attn.q_norm.weight"])
            k = rms(k, t[p + "self_attn.k_norm.weight"])
        att = torch.zeros(n, nh, hd, dtype=torch.float64)
        for head in range(nh):
            kv = head // (nh // nkv)
            for qi in range(n):
                qv = rope(q[qi, head], qi)
                scores = torch.stack([rope(k[kj, kv], kj) @ qv for kj in range(qi + 1)]) / hd**0.5
                w = torch.softmax(scores, 0)
                att[qi, head] = (w[:, None] * v[: qi + 1, kv]).sum(0)
        x = x + lin(att.reshape(n, nh * hd), p + "self_attn.o_proj")
        m = rms(x, t[p + "post_attention_layernorm.weight"])
        g = lin(m, p + "mlp.gate_proj")
        x = x + lin(torch.nn.functional.silu(g) * lin(m, p + "mlp.up_proj"), p + "mlp.down_proj")
    x = rms(x, t["model.norm.weight"])
    head_w = t["lm_head.weight"] if "lm_head.weight" in t else t["model.embed_tokens.weight"]
    return x @ head_w.T
