"""`checkpoint_save` / `checkpoint_load`: weights + AdamW state + RNG + the caller's `extra`, for exact resume."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

import torch

from ..capo import CapoMasks
from ..checkpoint import OptimizerSnapshot, load_checkpoint, save_checkpoint
from ..state import WorkerState
from .model_ops import describe
from .registry import Args, Reply, op
from .critic import CriticState
from .train import OptimState


@op("checkpoint_save")
def checkpoint_save(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {dir, policy_version?, extra?: any JSON}. The directory is also a complete model directory; a PPO critic
    (weights and optimizer) and the CAPO partitions are included when they exist."""
    loaded = state.require_model()
    if (version := args.opt_int("policy_version")) is not None:
        loaded.config.harnessrl.policy_version = version
    opt: Optional[OptimState] = state.extensions.get("optim")
    current = opt if opt is not None and opt.model is loaded.model else None
    policy = OptimizerSnapshot(None if current is None else current.optimizer, 0 if current is None else current.steps)
    cs: Optional[CriticState] = state.extensions.get("critic")
    critic = None if cs is None else (cs.critic, OptimizerSnapshot(None if cs.optim is None else cs.optim.optimizer, 0 if cs.optim is None else cs.optim.steps))
    capo: Optional[CapoMasks] = state.extensions.get("capo")
    save_checkpoint(loaded, policy, Path(args.req_str("dir")), args.raw.get("extra"), critic, capo)
    return Reply({**describe(loaded), "optimizer_steps": policy.steps, "critic": cs is not None, "capo": capo is not None, "lora": loaded.lora is not None})


@op("checkpoint_load")
def checkpoint_load(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {dir, dtype?}. Restores weights, optimizer, critic, CAPO partitions and RNG; returns the saved `extra`.
    Partitions of the model held before are dropped either way (they belong to other weights)."""
    r = load_checkpoint(Path(args.req_str("dir")), state.settings.device, args.opt_str("dtype", "float32") or "float32")
    state.loaded = r.loaded
    state.extensions.pop("optim", None)
    state.extensions.pop("critic", None)
    state.extensions.pop("capo", None)
    if r.capo is not None:
        state.extensions["capo"] = r.capo
    if r.policy_opt.optimizer is not None:
        state.extensions["optim"] = OptimState(r.loaded.model, r.policy_opt.optimizer, r.policy_opt.steps)
    if r.critic is not None:
        module, snap = r.critic
        optim = None if snap.optimizer is None else OptimState(module, snap.optimizer, snap.steps)
        state.extensions["critic"] = CriticState(module.eval(), optim)
    return Reply({**describe(r.loaded), "optimizer_steps": r.policy_opt.steps, "critic": r.critic is not None, "capo": r.capo is not None, "lora": r.loaded.lora is not None, "extra": r.extra})
