"""Tiny CPU presets (docs/model-dir.md): over the byte-level tokenizer, or over Qwen3's real vocabulary, special tokens and
chat template. src/model/presets.ts mirrors the names; a test checks it."""
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

# Qwen3's tokenizer (151,643 BPE entries + 26 added tokens = 151,669 ids). Qwen3's config.json pads the embedding to
# 151,936 rows (a multiple of 128); the presets keep that so a preset directory has a real checkpoint's shapes.
QWEN3_VOCAB_SIZE = 151_936
QWEN3_ENDOFTEXT_ID = 151_643
QWEN3_IM_END_ID = 151_645
QWEN3_MAX_POSITIONS = 40_960


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    config: ModelConfig
    # "bytes": the byte tokenizer written by modeldir.py; "qwen3": Qwen3's tokenizer files, copied verbatim.
    tokenizer: str = "bytes"


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


def _qwen3(hidden: int, layers: int, heads: int, kv_heads: int, head_dim: int, intermediate: int) -> ModelConfig:
    """Qwen3's vocabulary, ids and context length; head_dim is independent of hidden as in Qwen3 (heads*head_dim may exceed hidden)."""
    return replace(
        _tiny(hidden, layers, heads, kv_heads, intermediate),
        vocab_size=QWEN3_VOCAB_SIZE,
        head_dim=head_dim,
        max_position_embeddings=QWEN3_MAX_POSITIONS,
        bos_token_id=QWEN3_ENDOFTEXT_ID,
        eos_token_id=QWEN3_IM_END_ID,
    )


PRESETS: Dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("tiny-1m", "qwen3 layout, 4 layers, hidden 128, GQA 4/2 heads; ~1.0M parameters", _tiny(128, 4, 4, 2, 512)),
        Preset("tiny-10m", "qwen3 layout, 6 layers, hidden 384, GQA 6/2 heads; ~9.5M parameters", _tiny(384, 6, 6, 2, 1024)),
        Preset("qwen3-tiny", "Qwen3 tokenizer + template, 2 layers, hidden 64, GQA 4/2 heads of 32, tied; ~9.9M parameters", _qwen3(64, 2, 4, 2, 32, 256), "qwen3"),
        Preset("qwen3-20m", "Qwen3 tokenizer + template, 4 layers, hidden 128, GQA 4/2 heads of 32, tied; ~20.4M parameters", _qwen3(128, 4, 4, 2, 32, 512), "qwen3"),
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
