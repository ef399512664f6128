"""LoRA: low-rank adapters on the decoder's projections (our own implementation, torch only).

A targeted projection W (nn.Linear, HF name `...q_proj`) becomes `LoraLinear`: y = W x + b + (alpha / r) · B A x, with
A [r, in] drawn from a seeded generator and B [out, r] = 0, so an adapted model starts exactly at its base. The
wrapper keeps `weight` / `bias` under their HF names (frozen: requires_grad False, never in the optimizer) and adds
`lora_A` / `lora_B`; every attention path (segment, dense, long-row recompute, gradient checkpointing) calls the
projection module, so all of them see the adapter.

What leaves the worker: `hf_state_dict` (model.py) returns merged weights W + (alpha / r) · B A for adapted
projections, so a saved model directory is the adapted policy as any engine or tool reads it (llama.cpp through the
GGUF export, `doctor consistency`, a reference worker). Beside it, `adapter/` holds the adapter in the PEFT layout
(adapter_config.json + adapter_model.safetensors with `base_model.model.<hf module>.lora_{A,B}.weight`) that vLLM's
and SGLang's runtime adapter loading read; it applies to the *base* named in adapter_config.json, not to the merged
weights beside it. Checkpoints restore the base from that reference (checked by a fingerprint) plus the adapter.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from . import safetensors as st
from .errors import bad_request, invalid_model, not_found

# HF module names of the projections an adapter may target (attention, then MLP).
ATTENTION_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_TARGETS = ("gate_proj", "up_proj", "down_proj")
TARGETS = ATTENTION_TARGETS + MLP_TARGETS
ADAPTER_DIR = "adapter"
ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = "adapter_model.safetensors"
PEFT_PREFIX = "base_model.model."
# Elements sampled per tensor for the base fingerprint: enough to tell any two trained states apart, cheap on 7B.
FINGERPRINT_SAMPLES = 4096


@dataclass
class LoraConfig:
    rank: int
    alpha: float
    dropout: float = 0.0
    target_modules: Tuple[str, ...] = TARGETS

    @property
    def scale(self) -> float:
        return self.alpha / self.rank

    def validate(self) -> "LoraConfig":
        if self.rank < 1:
            raise bad_request("lora rank must be ≥ 1")
        if not (self.alpha > 0 and math.isfinite(self.alpha)):
            raise bad_request("lora alpha must be > 0")
        if not 0 <= self.dropout < 1:
            raise bad_request("lora dropout must be in [0, 1)")
        unknown = [t for t in self.target_modules if t not in TARGETS]
        if unknown or not self.target_modules or len(set(self.target_modules)) != len(self.target_modules):
            raise bad_request(f"lora target_modules must be distinct names among {', '.join(TARGETS)} (got {', '.join(self.target_modules) or 'none'})")
        return self

    def to_json(self) -> Dict[str, Any]:
        return {"rank": self.rank, "alpha": self.alpha, "dropout": self.dropout, "target_modules": list(self.target_modules)}

    @staticmethod
    def from_json(obj: Dict[str, Any]) -> "LoraConfig":
        return LoraConfig(int(obj["rank"]), float(obj["alpha"]), float(obj.get("dropout", 0.0)), tuple(str(t) for t in obj["target_modules"])).validate()


class LoraLinear(nn.Linear):
    """A frozen nn.Linear plus a trainable low-rank update; `weight`/`bias` are the wrapped layer's own parameters."""

    def __init__(self, base: nn.Linear, cfg: LoraConfig, gen: torch.Generator) -> None:
        nn.Module.__init__(self)  # not nn.Linear.__init__: the base's parameters are adopted, not re-created
        self.in_features = base.in_features
        self.out_features = base.out_features
        self.weight = base.weight
        self.bias = base.bias
        self.scale = cfg.scale
        self.dropout = cfg.dropout
        w = base.weight
        # PEFT's default init for A (kaiming-uniform with a = √5): U(−1/√in, 1/√in); drawn on the CPU so a seed gives
        # the same adapter on every device.
        bound = 1.0 / math.sqrt(self.in_features)
        a = (torch.rand((cfg.rank, self.in_features), generator=gen, dtype=torch.float32) * 2 - 1) * bound
        self.lora_A = nn.Parameter(a.to(device=w.device, dtype=w.dtype))
        self.lora_B = nn.Parameter(torch.zeros((self.out_features, cfg.rank), device=w.device, dtype=w.dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.linear(x, self.weight, self.bias)
        h = F.dropout(x, self.dropout, self.training) if self.dropout > 0 else x
        return out + F.linear(F.linear(h, self.lora_A), self.lora_B) * self.scale

    def merged_weight(self) -> torch.Tensor:
        """W + (alpha / r) · B A, computed in at least float32 and returned in the weight's dtype."""
        with torch.no_grad():
            ft = torch.promote_types(self.weight.dtype, torch.float32)
            delta = torch.matmul(self.lora_B.to(ft), self.lora_A.to(ft)) * self.scale
            return (self.weight.to(ft) + delta).to(self.weight.dtype)


@dataclass
class LoraState:
    """What a loaded model's adapter is: its config and the frozen base it applies to."""

    config: LoraConfig
    base_dir: Path
    base_fingerprint: str

    def to_json(self) -> Dict[str, Any]:
        return {**self.config.to_json(), "base_dir": str(self.base_dir), "base_fingerprint": self.base_fingerprint}


def adapted_modules(model: nn.Module) -> List[Tuple[str, LoraLinear]]:
    return [(n, m) for n, m in model.named_modules() if isinstance(m, LoraLinear)]


def base_tensor_names(model: nn.Module) -> List[str]:
    return sorted(n for n, _ in model.named_parameters() if ".lora_" not in n)


def _sample(name: str, t: torch.Tensor) -> bytes:
    flat = t.detach().reshape(-1)
    step = max(1, flat.numel() // FINGERPRINT_SAMPLES)
    sample = flat[::step][:FINGERPRINT_SAMPLES].to(device="cpu", dtype=torch.float32).contiguous()
    return f"{name}\0{tuple(t.shape)}\0".encode() + sample.numpy().tobytes()


def _digest(samples: Dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for name in sorted(samples):
        h.update(samples[name])
    return h.hexdigest()


def model_base_fingerprint(model: nn.Module) -> str:
    """sha256 over each frozen tensor's name, shape and an evenly strided sample of its values (as float32)."""
    params = dict(model.named_parameters())
    return _digest({n: _sample(n, params[n]) for n in base_tensor_names(model)})


def dir_fingerprint(directory: Path, names: Sequence[str], dtype: Optional[torch.dtype] = None) -> str:
    """The same fingerprint of a model directory's tensors (cast to `dtype` first when given: a model loaded in
    bfloat16 compares with its float32 files), read one weight file at a time."""
    files = st.checkpoint_files(directory)
    missing = [n for n in names if n not in files]
    if missing:
        raise invalid_model(f"{directory}: base weights lack {missing[:4]}")
    by_file: Dict[Path, List[str]] = {}
    for n in names:
        by_file.setdefault(files[n], []).append(n)
    samples: Dict[str, bytes] = {}
    for path, group in by_file.items():
        samples.update({name: _sample(name, t if dtype is None else t.to(dtype)) for name, t in st.load_file(path, group).items()})
    return _digest(samples)


def attach(model: nn.Module, cfg: LoraConfig, seed: int) -> int:
    """Wraps every targeted projection of every layer in LoraLinear and freezes all other parameters. Returns the
    number of adapted projections. Adapters are drawn in module-name order from one seeded CPU generator."""
    if adapted_modules(model):
        raise bad_request("the model already has LoRA adapters")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    count = 0
    layers = model.model.layers  # type: ignore[attr-defined]
    for layer in layers:
        for parent in (layer.self_attn, layer.mlp):
            for name in cfg.target_modules:
                child = getattr(parent, name, None)
                if isinstance(child, nn.Linear):
                    setattr(parent, name, LoraLinear(child, cfg, gen))
                    count += 1
    for name, p in model.named_parameters():
        p.requires_grad_(".lora_" in name)
    return count


def adapter_tensors(model: nn.Module) -> Dict[str, torch.Tensor]:
    """The adapter under PEFT names: `base_model.model.<module>.lora_A.weight` [r, in], `.lora_B.weight` [out, r]."""
    out: Dict[str, torch.Tensor] = {}
    for name, m in adapted_modules(model):
        out[f"{PEFT_PREFIX}{name}.lora_A.weight"] = m.lora_A.detach().cpu().contiguous()
        out[f"{PEFT_PREFIX}{name}.lora_B.weight"] = m.lora_B.detach().cpu().contiguous()
    return out


def save_adapter(model: nn.Module, state: LoraState, out: Path) -> None:
    """Writes `out/adapter/` in the PEFT layout (weights first, config last, each through a rename)."""
    d = out / ADAPTER_DIR
    d.mkdir(parents=True, exist_ok=True)
    st.save_file(adapter_tensors(model), d / ADAPTER_WEIGHTS, {"format": "pt"})
    cfg = state.config
    peft = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": str(state.base_dir),
        "r": cfg.rank,
        "lora_alpha": cfg.alpha,
        "lora_dropout": cfg.dropout,
        "target_modules": list(cfg.target_modules),
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "modules_to_save": None,
        "use_rslora": False,
        "use_dora": False,
        "init_lora_weights": True,
        "harnessrl": {"base_fingerprint": state.base_fingerprint},
    }
    tmp = d / f"{ADAPTER_CONFIG}.tmp{os.getpid()}"
    tmp.write_text(json.dumps(peft, indent=2) + "\n", "utf-8")
    os.replace(tmp, d / ADAPTER_CONFIG)


def load_adapter_weights(model: nn.Module, directory: Path) -> None:
    """Copies `directory/adapter/adapter_model.safetensors` into the model's (already attached) adapters."""
    path = directory / ADAPTER_DIR / ADAPTER_WEIGHTS
    if not path.exists():
        raise not_found(f"{path}: no adapter weights")
    tensors = st.load_file(path)
    expected = {k: None for k in adapter_tensors(model)}
    if set(tensors) != set(expected):
        raise invalid_model(f"{path}: adapter tensors do not match the LoRA config ({len(tensors)} saved, {len(expected)} expected)")
    with torch.no_grad():
        for name, m in adapted_modules(model):
            for key, p in (("lora_A", m.lora_A), ("lora_B", m.lora_B)):
                src = tensors[f"{PEFT_PREFIX}{name}.{key}.weight"]
                if tuple(src.shape) != tuple(p.shape):
                    raise invalid_model(f"{path}: {name}.{key} has shape {tuple(src.shape)}, expected {tuple(p.shape)}")
                p.copy_(src.to(dtype=p.dtype))


def parse_targets(raw: Optional[str]) -> Tuple[str, ...]:
    if raw is None:
        return TARGETS
    return tuple(t.strip() for t in raw.split(",") if t.strip())
