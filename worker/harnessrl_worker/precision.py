"""Mixed precision: bf16 autocast around every op, fp32 master weights.

`--autocast bf16` (env HARNESSRL_AUTOCAST=bf16) keeps the parameters, gradients and AdamW moments in float32 (the
master weights: `load` with the default dtype float32) and runs matrix products in bfloat16 under torch.autocast; the
model's own upcasts (RMSNorm, softmax, RoPE angles, logits before log_softmax) stay float32. The alternative, pure bf16
(`load` with dtype bfloat16), halves weight memory but rounds every AdamW update to bf16: tiny updates vanish. Autocast
is the default choice on CUDA for training; on the CPU it works too (tested here) but is only a numerics check.
"""
from __future__ import annotations

import contextlib
from typing import ContextManager, Optional

import torch

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16, "float16": torch.float16}


def parse_autocast(name: Optional[str]) -> Optional[torch.dtype]:
    if name is None or name in ("", "off", "none", "fp32", "float32"):
        return None
    if name not in AUTOCAST_DTYPES:
        raise ValueError(f"--autocast must be bf16, fp16 or off, got {name!r}")
    return AUTOCAST_DTYPES[name]


def autocast(device: torch.device, dtype: Optional[torch.dtype]) -> ContextManager[object]:
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)
