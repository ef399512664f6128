"""`hello` (versions, device, ops, presets) and `shutdown`."""
from __future__ import annotations

import platform
from typing import Dict

import torch

from .. import PROTOCOL_VERSION, __version__
from ..model import HAS_SDPA
from ..presets import PRESETS
from ..state import WorkerState
from .registry import OPS, Args, Reply, op


@op("hello")
def hello(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    s = state.settings
    return Reply(
        {
            "protocol": PROTOCOL_VERSION,
            "worker_version": __version__,
            "torch_version": torch.__version__,
            "python_version": platform.python_version(),
            "device": str(s.device),
            "cuda_available": torch.cuda.is_available(),
            "threads": s.threads,
            "sdpa": HAS_SDPA,
            "token_budget": s.token_budget,
            "ops": sorted(OPS),
            "presets": [{"name": p.name, "description": p.description, "parameters": p.config.num_parameters(), "model_type": p.config.model_type, "tokenizer": p.tokenizer} for p in PRESETS.values()],
        }
    )


@op("shutdown")
def shutdown(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    state.stopping = True
    return Reply({"stopping": True})
