"""`checkpoint_save` / `checkpoint_load`: weights + AdamW state + RNG + the caller's `extra`, for exact resume."""
from __future__ import annotations

from pathlib import Path
from typing import Dict

import torch

from ..checkpoint import load_checkpoint, save_checkpoint
from ..state import WorkerState
from .model_ops import describe
from .registry import Args, Reply, op
from .train import OptimState


@op("checkpoint_save")
def checkpoint_save(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {dir, policy_version?, extra?: any JSON}. The directory is also a complete model directory."""
    loaded = state.require_model()
    if (version := args.opt_int("policy_version")) is not None:
        loaded.config.harnessrl.policy_version = version
    opt: OptimState | None = state.extensions.get("optim")
    current = opt if opt is not None and opt.model is loaded.model else None
    save_checkpoint(loaded, None if current is None else current.optimizer, 0 if current is None else current.steps, Path(args.req_str("dir")), args.raw.get("extra"))
    return Reply({**describe(loaded), "optimizer_steps": 0 if current is None else current.steps})


@op("checkpoint_load")
def checkpoint_load(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {dir, dtype?}. Restores weights, optimizer and RNG; returns the saved `extra`."""
    loaded, optimizer, steps, extra = load_checkpoint(Path(args.req_str("dir")), state.settings.device, args.opt_str("dtype", "float32") or "float32")
    state.loaded = loaded
    state.extensions.pop("optim", None)
    if optimizer is not None:
        state.extensions["optim"] = OptimState(loaded.model, optimizer, steps)
    return Reply({**describe(loaded), "optimizer_steps": steps, "extra": extra})
