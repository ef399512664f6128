"""Model configuration: the subset of a Hugging Face Qwen2/Qwen3 `config.json` the decoder needs, plus harnessrl metadata."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Mapping, Optional

from .errors import invalid_model

MODEL_TYPES = ("qwen2", "qwen3")
ARCHITECTURES = {"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}


@dataclass
class HarnessRLMeta:
    preset: Optional[str] = None
    seed: Optional[int] = None
    policy_version: int = 0


@dataclass
class ModelConfig:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-6
    rope_theta: float = 1_000_000.0
    max_position_embeddings: int = 8192
    tie_word_embeddings: bool = True
    # q/k/v biases. Qwen2 always has them (its config has no field); Qwen3 follows `attention_bias` (also on o_proj).
    attention_bias: bool = False
    torch_dtype: str = "float32"
    bos_token_id: Optional[int] = None
    eos_token_id: Optional[int] = None
    harnessrl: HarnessRLMeta = field(default_factory=HarnessRLMeta)

    @property
    def qkv_bias(self) -> bool:
        return self.model_type == "qwen2" or self.attention_bias

    @property
    def o_bias(self) -> bool:
        return self.model_type == "qwen3" and self.attention_bias

    @property
    def qk_norm(self) -> bool:
        return self.model_type == "qwen3"

    def num_parameters(self) -> int:
        """Parameter count from the shapes alone (tied embeddings counted once); equals CausalLM.num_parameters()."""
        h, hd, nh, nkv = self.hidden_size, self.head_dim, self.num_attention_heads, self.num_key_value_heads
        attn = h * nh * hd * 2 + h * nkv * hd * 2
        if self.qkv_bias:
            attn += nh * hd + 2 * nkv * hd
        if self.o_bias:
            attn += h
        if self.qk_norm:
            attn += 2 * hd
        layer = attn + 3 * h * self.intermediate_size + 2 * h
        embed = self.vocab_size * h
        return embed + self.num_hidden_layers * layer + h + (0 if self.tie_word_embeddings else embed)

    def validate(self) -> "ModelConfig":
        if self.model_type not in MODEL_TYPES:
            raise invalid_model(f"model_type {self.model_type!r} is not supported (supported: {', '.join(MODEL_TYPES)})")
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim"):
            if getattr(self, name) <= 0:
                raise invalid_model(f"config {name} must be positive")
        if self.num_attention_heads % self.num_key_value_heads != 0:
            raise invalid_model("num_attention_heads must be a multiple of num_key_value_heads")
        if self.head_dim % 2 != 0:
            raise invalid_model("head_dim must be even (rotary embedding)")
        return self

    def to_hf(self) -> Dict[str, Any]:
        """The config.json contents: HF field names, harnessrl metadata under "harnessrl"."""
        d = asdict(self)
        d["architectures"] = [ARCHITECTURES[self.model_type]]
        d["hidden_act"] = "silu"
        d["use_sliding_window"] = False
        d["rope_scaling"] = None
        d["harnessrl"] = asdict(self.harnessrl)
        # Qwen2 always has q/k/v biases; say so explicitly for readers that consult the field.
        d["attention_bias"] = self.qkv_bias if self.model_type == "qwen2" else self.attention_bias
        return d

    @staticmethod
    def from_hf(obj: Mapping[str, Any]) -> "ModelConfig":
        """Reads a real or harnessrl-written config.json; unknown fields are ignored."""
        try:
            model_type = str(obj["model_type"])
            hidden = int(obj["hidden_size"])
            heads = int(obj["num_attention_heads"])
            head_dim_raw = obj.get("head_dim")
            meta_raw = obj.get("harnessrl") or {}
            if obj.get("use_sliding_window"):
                raise invalid_model("sliding-window attention (use_sliding_window) is not supported")
            # Newer transformers move RoPE settings into `rope_parameters` and rename torch_dtype to dtype.
            raw_rope = obj.get("rope_parameters")
            rope_params: Dict[str, Any] = raw_rope if isinstance(raw_rope, dict) else {}
            scaling = obj.get("rope_scaling") or rope_params
            if isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type")) not in (None, "default"):
                raise invalid_model(f"rope scaling {scaling!r} is not supported")
            rope_theta = obj.get("rope_theta", rope_params.get("rope_theta", 10000.0))
            eos = obj.get("eos_token_id")
            cfg = ModelConfig(
                model_type=model_type,
                vocab_size=int(obj["vocab_size"]),
                hidden_size=hidden,
                intermediate_size=int(obj["intermediate_size"]),
                num_hidden_layers=int(obj["num_hidden_layers"]),
                num_attention_heads=heads,
                num_key_value_heads=int(obj.get("num_key_value_heads") or heads),
                head_dim=int(head_dim_raw) if head_dim_raw else hidden // heads,
                rms_norm_eps=float(obj.get("rms_norm_eps", 1e-6)),
                rope_theta=float(rope_theta),
                max_position_embeddings=int(obj.get("max_position_embeddings", 8192)),
                tie_word_embeddings=bool(obj.get("tie_word_embeddings", False)),
                attention_bias=bool(obj.get("attention_bias", False)),
                torch_dtype=str(obj.get("torch_dtype") or obj.get("dtype") or "float32"),
                bos_token_id=obj.get("bos_token_id") if isinstance(obj.get("bos_token_id"), int) else None,
                eos_token_id=eos if isinstance(eos, int) else (eos[0] if isinstance(eos, list) and eos else None),
                harnessrl=HarnessRLMeta(
                    preset=meta_raw.get("preset"),
                    seed=meta_raw.get("seed"),
                    policy_version=int(meta_raw.get("policy_version", 0)),
                ),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise invalid_model(f"config.json is missing or has a malformed field: {e}") from None
        return cfg.validate()
