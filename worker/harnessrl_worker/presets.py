"""Tiny CPU presets over the byte-level tokenizer (docs/model-dir.md). src/model/presets.ts mirrors the names; a test checks it."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, Optional

from .config import HarnessRLMeta, ModelConfig
from .errors import bad_request

# The byte tokenizer: ids 0-255 are bytes, then the special tokens in this fixed order.
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
BYTE_VOCAB_SIZE = 256 + len(SPECIAL_TOKENS)
ENDOFTEXT_ID = 256
IM_END_ID = 258


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    config: ModelConfig


def _tiny(hidden: int, layers: int, heads: int, kv_heads: int, intermediate: int) -> ModelConfig:
    return ModelConfig(
        model_type="qwen3",
        vocab_size=BYTE_VOCAB_SIZE,
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=hidden // heads,
        rms_norm_eps=1e-6,
        rope_theta=1_000_000.0,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        attention_bias=False,
        torch_dtype="float32",
        bos_token_id=ENDOFTEXT_ID,
        eos_token_id=IM_END_ID,
    )


PRESETS: Dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("tiny-1m", "qwen3 layout, 4 layers, hidden 128, GQA 4/2 heads; ~1.0M parameters", _tiny(128, 4, 4, 2, 512)),
        Preset("tiny-10m", "qwen3 layout, 6 layers, hidden 384, GQA 6/2 heads; ~9.5M parameters", _tiny(384, 6, 6, 2, 1024)),
    )
}


def preset_config(name: str, seed: int, model_type: Optional[str] = None) -> ModelConfig:
    """A fresh config for a preset; `model_type` may switch the layout to qwen2 (qkv biases, no q/k norm)."""
    preset = PRESETS.get(name)
    if preset is None:
        raise bad_request(f"unknown preset {name!r} (known: {', '.join(PRESETS)})")
    cfg = replace(preset.config, harnessrl=HarnessRLMeta(preset=name, seed=seed, policy_version=0))
    if model_type is not None:
        cfg = replace(cfg, model_type=model_type)
    return cfg.validate()
