"""Training checkpoints: a complete model directory plus optimizer state and RNG, for exact resume.

Layout (all inside the checkpoint directory):
  config.json, model.safetensors, tokenizer files  — an ordinary model directory (engines can serve it)
  optimizer.safetensors  — per parameter `<hf name>.<state key>` (AdamW: step, exp_avg, exp_avg_sq), plus `rng.cpu`
                           and `rng.cuda.<i>` generator states
                           and, when CAPO partitions exist, `capo.action.<layer>` / `capo.args.<layer>` unit masks
                           (uint8 [intermediate_size]): a CAPO step is only reproducible with the same partitions
  trainer_state.json     — {"format": 2, "optimizer_steps", "param_groups": [...], "critic": {...} | null,
                           "capo": {"top_fraction"} | null, "lora": {rank, alpha, dropout, target_modules,
                           base_dir, base_fingerprint} | null, "extra": <caller's JSON>, "files": {path: bytes}};
                           written last (and removed first when a directory is overwritten), and the file list is
                           verified on load, so a partly written checkpoint is never loaded
  adapter/               — with LoRA: the adapter (PEFT layout, lora.py); the weights above are then merged, and
                           resume reads the frozen base from `lora.base_dir` instead (lora_checkpoint.py); the
                           optimizer state covers the adapter parameters only
  critic/                — the PPO critic's weights when one exists (its AdamW state is in optimizer.safetensors
                           under `critic.<name>.<key>`)
The caller's `extra` carries what only it knows (LR schedule position, data cursor, run step).
Format 1 (before CAPO masks were saved) still loads, as a checkpoint without partitions.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import torch

from . import safetensors as st
from .capo import CapoMasks
from .errors import invalid_model, not_found
from .critic import Critic, load_critic, save_critic
from .lora_checkpoint import load_adapted
from .modeldir import LoadedModel, load_model_dir, save_model_dir

FORMAT = 2
READABLE_FORMATS = (1, 2)
STATE_FILE = "trainer_state.json"
OPTIM_FILE = "optimizer.safetensors"
CRITIC_DIR = "critic"
CRITIC_PREFIX = "critic."
CAPO_PREFIX = "capo."


@dataclass
class OptimizerSnapshot:
    """A module's optimizer as saved: AdamW (or None) and its step count."""

    optimizer: Optional[torch.optim.Optimizer]
    steps: int


def export_optimizer(module: torch.nn.Module, optimizer: Optional[torch.optim.Optimizer], prefix: str) -> Tuple[Dict[str, torch.Tensor], List[Dict[str, Any]]]:
    """Per-parameter state as `<prefix><param name>.<key>` tensors, and the hyper-parameter groups by parameter name."""
    tensors: Dict[str, torch.Tensor] = {}
    groups: List[Dict[str, Any]] = []
    if optimizer is None:
        return tensors, groups
    names = {id(p): n for n, p in module.named_parameters()}
    for group in optimizer.param_groups:
        hyper = {k: (list(v) if isinstance(v, tuple) else v) for k, v in group.items() if k != "params"}
        groups.append({**hyper, "params": [names[id(p)] for p in group["params"]]})
        for p in group["params"]:
            for key, value in optimizer.state.get(p, {}).items():
                t = value if isinstance(value, torch.Tensor) else torch.tensor(float(value))
                tensors[f"{prefix}{names[id(p)]}.{key}"] = t.detach().cpu()
    return tensors, groups


def file_sizes(directory: Path) -> Dict[str, int]:
    """Every file of a checkpoint (but its marker and temporaries) by relative path, with its size."""
    out: Dict[str, int] = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if path.is_file() and rel != STATE_FILE and ".tmp" not in path.name:
            out[rel] = path.stat().st_size
    return out


def save_checkpoint(loaded: LoadedModel, policy_opt: OptimizerSnapshot, out: Path, extra: Any, critic: Optional[Tuple[Critic, OptimizerSnapshot]] = None, capo: Optional[CapoMasks] = None) -> None:
    # The marker (trainer_state.json, listing every file and its size) goes first when overwriting and last when
    # writing: a directory cut off mid-save is never taken for a checkpoint (read_state verifies the list).
    (out / STATE_FILE).unlink(missing_ok=True)
    save_model_dir(loaded, out)
    tensors: Dict[str, torch.Tensor] = {"rng.cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{i}"] = s
    policy_tensors, groups = export_optimizer(loaded.model, policy_opt.optimizer, "")
    tensors.update(policy_tensors)
    critic_state: Optional[Dict[str, Any]] = None
    if critic is not None:
        module, snap = critic
        save_critic(module, out / CRITIC_DIR)
        critic_tensors, critic_groups = export_optimizer(module, snap.optimizer, CRITIC_PREFIX)
        tensors.update(critic_tensors)
        critic_state = {"optimizer_steps": snap.steps, "param_groups": critic_groups}
    capo_state: Optional[Dict[str, Any]] = None
    if capo is not None:
        tensors.update(capo.to_tensors(CAPO_PREFIX))
        capo_state = {"top_fraction": capo.top_fraction}
    st.save_file(tensors, out / OPTIM_FILE)
    state = {"format": FORMAT, "optimizer_steps": policy_opt.steps, "param_groups": groups, "critic": critic_state, "capo": capo_state, "lora": None if loaded.lora is None else loaded.lora.to_json(), "extra": extra, "files": file_sizes(out)}
    tmp = out / f"{STATE_FILE}.tmp{os.getpid()}"
    tmp.write_text(json.dumps(state, indent=2) + "\n", "utf-8")
    os.replace(tmp, out / STATE_FILE)


def read_state(directory: Path) -> Dict[str, Any]:
    path = directory / STATE_FILE
    if not path.exists():
        raise not_found(f"{directory}: no {STATE_FILE} (not a training checkpoint)")
    state = json.loads(path.read_text("utf-8"))
    if not isinstance(state, dict) or state.get("format") not in READABLE_FORMATS:
        raise invalid_model(f"{path}: unsupported checkpoint format")
    # Checkpoints written before the file list existed carry none and are taken as they are.
    listed = state.get("files")
    if isinstance(listed, dict):
        for rel, size in listed.items():
            f = directory / rel
            if not f.is_file() or f.stat().st_size != size:
                raise invalid_model(f"{directory}: incomplete checkpoint ({rel} is {'missing' if not f.is_file() else f'{f.stat().st_size} bytes, not {size}'})")
    return state


def restore_optimizer(module: torch.nn.Module, groups: List[Dict[str, Any]], tensors: Dict[str, torch.Tensor], prefix: str) -> Optional[torch.optim.AdamW]:
    """Rebuilds the AdamW optimizer with its per-parameter state, or None when none was saved."""
    if not groups:
        return None
    params = dict(module.named_parameters())
    device = next(module.parameters()).device
    torch_groups = []
    for g in groups:
        hyper = {k: (tuple(v) if k == "betas" else v) for k, v in g.items() if k != "params"}
        torch_groups.append({**hyper, "params": [params[n] for n in g["params"]]})
    optimizer = torch.optim.AdamW(torch_groups)
    for name, p in params.items():
        head = prefix + name + "."
        entries = {k[len(head) :]: v for k, v in tensors.items() if k.startswith(head) and "." not in k[len(head) :]}
        if entries:
            # `step` stays a CPU scalar tensor (as torch keeps it); moments follow the parameter.
            optimizer.state[p] = {k: (v.clone() if k == "step" else v.to(device=device, dtype=p.dtype).clone()) for k, v in entries.items()}
    return optimizer


@dataclass
class Restored:
    loaded: LoadedModel
    policy_opt: OptimizerSnapshot
    critic: Optional[Tuple[Critic, OptimizerSnapshot]]
    extra: Any
    capo: Optional[CapoMasks] = None


def load_checkpoint(directory: Path, device: torch.device, dtype_name: str = "float32") -> Restored:
    state = read_state(directory)
    lora = state.get("lora")
    loaded = load_adapted(directory, lora, device, dtype_name) if isinstance(lora, dict) else load_model_dir(directory, device, dtype_name)
    tensors = st.load_file(directory / OPTIM_FILE)
    policy_opt = OptimizerSnapshot(restore_optimizer(loaded.model, state.get("param_groups") or [], tensors, ""), int(state.get("optimizer_steps", 0)))
    critic: Optional[Tuple[Critic, OptimizerSnapshot]] = None
    critic_state = state.get("critic")
    if isinstance(critic_state, dict):
        module = load_critic(directory / CRITIC_DIR, device)
        opt = restore_optimizer(module, critic_state.get("param_groups") or [], tensors, CRITIC_PREFIX)
        critic = (module, OptimizerSnapshot(opt, int(critic_state.get("optimizer_steps", 0))))
    capo: Optional[CapoMasks] = None
    capo_state = state.get("capo")
    if isinstance(capo_state, dict):
        capo = CapoMasks.from_tensors({k: v for k, v in tensors.items() if k.startswith(CAPO_PREFIX)}, CAPO_PREFIX, float(capo_state.get("top_fraction", 0.25)), loaded.model)
    if "rng.cpu" in tensors:
        torch.set_rng_state(tensors["rng.cpu"])
    if torch.cuda.is_available():
        cuda_states = [tensors[k] for k in sorted(k for k in tensors if k.startswith("rng.cuda."))]
        if cuda_states and len(cuda_states) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda_states)
    return Restored(loaded, policy_opt, critic, state.get("extra"), capo)
