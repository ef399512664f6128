"""Process-level setup: BLAS/torch threads and device choice. Import before anything that imports torch."""
from __future__ import annotations

import os
from typing import Optional


def configure_thread_env() -> None:
    """Two thread pools (OpenBLAS and torch's) fighting over 2 cores is slower than one: keep BLAS single-threaded
    unless the caller set it. Must run before torch is imported."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def default_threads(requested: Optional[int]) -> int:
    if requested is not None and requested > 0:
        return requested
    env = os.environ.get("HARNESSRL_TORCH_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(2, os.cpu_count() or 1))


def resolve_device(requested: Optional[str]) -> str:
    """`auto` (default) = cuda when available, else cpu; anything else is passed to torch.device as is."""
    import torch

    name = requested or os.environ.get("HARNESSRL_DEVICE") or "auto"
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name
