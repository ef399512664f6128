"""Model directories (docs/model-dir.md): create from a preset, load a real or tiny checkpoint by HF names, save."""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch

from . import safetensors as st
from .config import ModelConfig
from .errors import invalid_model, not_found
from .model import CausalLM, hf_state_dict, init_weights
from .presets import IM_END_ID, SPECIAL_TOKENS, ENDOFTEXT_ID, preset_config

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TEMPLATE = REPO_ROOT / "templates" / "chatml-tools.jinja"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "special_tokens_map.json", "generation_config.json")

DTYPE_BY_NAME: Dict[str, torch.dtype] = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass
class LoadedModel:
    model: CausalLM
    config: ModelConfig
    directory: Optional[Path]


def resolve_dtype(name: str, cfg: ModelConfig) -> torch.dtype:
    """`auto` = the checkpoint's torch_dtype (float32 for unknown names)."""
    if name == "auto":
        return DTYPE_BY_NAME.get(cfg.torch_dtype, torch.float32)
    if name not in DTYPE_BY_NAME:
        raise invalid_model(f"dtype must be one of auto, {', '.join(DTYPE_BY_NAME)}")
    return DTYPE_BY_NAME[name]


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", "utf-8")
    os.replace(tmp, path)


def write_byte_tokenizer(out: Path, max_length: int, chat_template: Optional[str]) -> None:
    """The tiny byte-level tokenizer's files; the chat template is the repo's templates/chatml-tools.jinja by default."""
    template = chat_template
    if template is None:
        if not DEFAULT_TEMPLATE.exists():
            raise not_found(f"chat template {DEFAULT_TEMPLATE} is missing (pass chat_template explicitly)")
        template = DEFAULT_TEMPLATE.read_text("utf-8")
    # Special tokens in id order from 256 (src/tokenizer/load.ts checks the list against its own).
    write_json_atomic(out / "tokenizer.json", {"harnessrl": {"type": "bytes", "special_tokens": list(SPECIAL_TOKENS)}})
    write_json_atomic(
        out / "tokenizer_config.json",
        {
            "harnessrl_tokenizer": "bytes",
            "chat_template": template,
            "eos_token": SPECIAL_TOKENS[IM_END_ID - 256],
            "pad_token": SPECIAL_TOKENS[ENDOFTEXT_ID - 256],
            "bos_token": None,
            "model_max_length": max_length,
        },
    )


def save_weights(model: CausalLM, cfg: ModelConfig, out: Path, dtype: Optional[torch.dtype] = None) -> None:
    """config.json + model.safetensors (weights first, so a reader that sees the new config also sees the new weights)."""
    out.mkdir(parents=True, exist_ok=True)
    tensors = hf_state_dict(model)
    if dtype is not None:
        tensors = {k: v.to(dtype) for k, v in tensors.items()}
    written = next(iter(tensors.values())).dtype if tensors else torch.float32
    cfg.torch_dtype = {v: k for k, v in DTYPE_BY_NAME.items()}.get(written, "float32")
    st.save_file(tensors, out / "model.safetensors", {"format": "pt", "policy_version": str(cfg.harnessrl.policy_version)})
    # A previously sharded checkpoint in the same directory would shadow the new single file.
    index = out / "model.safetensors.index.json"
    if index.exists():
        index.unlink()
    write_json_atomic(out / "config.json", cfg.to_hf())


def init_model_dir(preset: str, seed: int, out: Path, model_type: Optional[str] = None, chat_template: Optional[str] = None) -> LoadedModel:
    cfg = preset_config(preset, seed, model_type)
    model = CausalLM(cfg)
    init_weights(model, seed)
    out.mkdir(parents=True, exist_ok=True)
    write_byte_tokenizer(out, cfg.max_position_embeddings, chat_template)
    save_weights(model, cfg, out, torch.float32)
    return LoadedModel(model, cfg, out)


def read_config(directory: Path) -> ModelConfig:
    path = directory / "config.json"
    if not path.exists():
        raise not_found(f"{directory}: no config.json (is this a model directory?)")
    try:
        obj = json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as e:
        raise invalid_model(f"{path}: not JSON ({e})") from None
    if not isinstance(obj, dict):
        raise invalid_model(f"{path}: not a JSON object")
    return ModelConfig.from_hf(obj)


def load_state(model: CausalLM, tensors: Dict[str, torch.Tensor]) -> None:
    """Copies checkpoint tensors into the model by HF name; every parameter must be present, nothing unknown allowed."""
    expected = hf_state_dict(model)
    ignored: List[str] = []
    unexpected: List[str] = []
    for name in tensors:
        if name in expected:
            continue
        # Tied checkpoints sometimes still store lm_head; old ones store rotary inverse frequencies.
        if (name == "lm_head.weight" and model.lm_head is None) or name.endswith("rotary_emb.inv_freq"):
            ignored.append(name)
        else:
            unexpected.append(name)
    missing = [n for n in expected if n not in tensors]
    if missing or unexpected:
        raise invalid_model(f"checkpoint does not match the config: missing {missing[:8]}{'…' if len(missing) > 8 else ''}, unexpected {unexpected[:8]}{'…' if len(unexpected) > 8 else ''}")
    with torch.no_grad():
        for name, target in expected.items():
            src = tensors[name]
            if tuple(src.shape) != tuple(target.shape):
                raise invalid_model(f"{name}: checkpoint shape {tuple(src.shape)} != model shape {tuple(target.shape)}")
            target.copy_(src.to(dtype=target.dtype))


def load_model_dir(directory: Path, device: torch.device, dtype_name: str = "float32", attention: str = "auto") -> LoadedModel:
    cfg = read_config(directory)
    dtype = resolve_dtype(dtype_name, cfg)
    model = CausalLM(cfg, attention=attention)
    load_state(model, st.load_checkpoint(directory))
    model.to(device=device, dtype=dtype)
    model.eval()
    return LoadedModel(model, cfg, directory)


def save_model_dir(loaded: LoadedModel, out: Path, policy_version: Optional[int] = None, dtype_name: Optional[str] = None) -> None:
    """Writes weights + config; tokenizer files are copied from the source directory so `out` is complete on its own."""
    if policy_version is not None:
        loaded.config.harnessrl.policy_version = policy_version
    out.mkdir(parents=True, exist_ok=True)
    src = loaded.directory
    if src is not None and src.resolve() != out.resolve():
        for name in TOKENIZER_FILES:
            if (src / name).exists():
                shutil.copyfile(src / name, out / name)
    dtype = None if dtype_name is None else resolve_dtype(dtype_name, loaded.config)
    save_weights(loaded.model, loaded.config, out, dtype)
    loaded.directory = out
