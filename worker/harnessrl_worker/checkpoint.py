"""Training checkpoints: a complete model directory plus optimizer state and RNG, for exact resume.

Layout (all inside the checkpoint directory):
  config.json, model.safetensors, tokenizer files  — an ordinary model directory (engines can serve it)
  optimizer.safetensors  — per parameter `<hf name>.<state key>` (AdamW: step, exp_avg, exp_avg_sq), plus `rng.cpu`
                           and `rng.cuda.<i>` generator states
  trainer_state.json     — {"format": 1, "optimizer_steps", "param_groups": [...], "extra": <caller's JSON>}
The caller's `extra` carries what only it knows (LR schedule position, data cursor, run step).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch

from . import safetensors as st
from .errors import invalid_model, not_found
from .model import CausalLM
from .modeldir import LoadedModel, load_model_dir, save_model_dir

FORMAT = 1
STATE_FILE = "trainer_state.json"
OPTIM_FILE = "optimizer.safetensors"


def save_checkpoint(loaded: LoadedModel, optimizer: Optional[torch.optim.Optimizer], steps: int, out: Path, extra: Any) -> None:
    save_model_dir(loaded, out)
    names = {id(p): n for n, p in loaded.model.named_parameters()}
    tensors: Dict[str, torch.Tensor] = {"rng.cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng.cuda.{i}"] = s
    groups: List[Dict[str, Any]] = []
    if optimizer is not None:
        for group in optimizer.param_groups:
            hyper = {k: (list(v) if isinstance(v, tuple) else v) for k, v in group.items() if k != "params"}
            groups.append({**hyper, "params": [names[id(p)] for p in group["params"]]})
            for p in group["params"]:
                for key, value in optimizer.state.get(p, {}).items():
                    t = value if isinstance(value, torch.Tensor) else torch.tensor(float(value))
                    tensors[f"{names[id(p)]}.{key}"] = t.detach().cpu()
    st.save_file(tensors, out / OPTIM_FILE)
    state = {"format": FORMAT, "optimizer_steps": steps, "param_groups": groups, "extra": extra}
    tmp = out / f"{STATE_FILE}.tmp{os.getpid()}"
    tmp.write_text(json.dumps(state, indent=2) + "\n", "utf-8")
    os.replace(tmp, out / STATE_FILE)


def read_state(directory: Path) -> Dict[str, Any]:
    path = directory / STATE_FILE
    if not path.exists():
        raise not_found(f"{directory}: no {STATE_FILE} (not a training checkpoint)")
    state = json.loads(path.read_text("utf-8"))
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise invalid_model(f"{path}: unsupported checkpoint format")
    return state


def restore_optimizer(model: CausalLM, state: Dict[str, Any], tensors: Dict[str, torch.Tensor]) -> Optional[torch.optim.AdamW]:
    """Rebuilds the AdamW optimizer with its per-parameter state, or None when the checkpoint had none."""
    groups = state.get("param_groups") or []
    if not groups:
        return None
    params = dict(model.named_parameters())
    device = next(model.parameters()).device
    torch_groups = []
    for g in groups:
        hyper = {k: (tuple(v) if k == "betas" else v) for k, v in g.items() if k != "params"}
        torch_groups.append({**hyper, "params": [params[n] for n in g["params"]]})
    optimizer = torch.optim.AdamW(torch_groups)
    prefix_len = {n: len(n) + 1 for n in params}
    for name, p in params.items():
        entries = {k[prefix_len[name]:]: v for k, v in tensors.items() if k.startswith(name + ".") and "." not in k[prefix_len[name]:]}
        if entries:
            # `step` stays a CPU scalar tensor (as torch keeps it); moments follow the parameter.
            optimizer.state[p] = {k: (v.clone() if k == "step" else v.to(device=device, dtype=p.dtype).clone()) for k, v in entries.items()}
    return optimizer


def load_checkpoint(directory: Path, device: torch.device, dtype_name: str = "float32") -> tuple[LoadedModel, Optional[torch.optim.AdamW], int, Any]:
    state = read_state(directory)
    loaded = load_model_dir(directory, device, dtype_name)
    tensors = st.load_file(directory / OPTIM_FILE)
    optimizer = restore_optimizer(loaded.model, state, tensors)
    if "rng.cpu" in tensors:
        torch.set_rng_state(tensors["rng.cpu"])
    if torch.cuda.is_available():
        cuda_states = [tensors[k] for k in sorted(k for k in tensors if k.startswith("rng.cuda."))]
        if cuda_states and len(cuda_states) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda_states)
    return loaded, optimizer, int(state.get("optimizer_steps", 0)), state.get("extra")
