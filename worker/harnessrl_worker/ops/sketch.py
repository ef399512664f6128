"""`grad_sketch`: a fixed random low-dimensional projection of the accumulated gradient (HarnessBandit's
transferability signal compares these between harnesses by cosine)."""
from __future__ import annotations

import zlib
from typing import Dict

import torch

from .. import distributed
from ..errors import bad_request
from ..state import WorkerState
from .registry import Args, Reply, op

CHUNK = 1 << 22


def count_sketch(named_grads: Dict[str, torch.Tensor], dim: int, seed: int) -> torch.Tensor:
    """Σ over gradient entries of sign(e) · g[e] into bucket(e), with bucket and sign drawn from a generator seeded by
    (seed, parameter name): the same projection every step, so sketches are comparable; it is linear in the gradient
    and preserves inner products in expectation."""
    sketch = torch.zeros(dim, dtype=torch.float64)
    for name in sorted(named_grads):
        flat = named_grads[name].detach().reshape(-1).to(device="cpu", dtype=torch.float64)
        gen = torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(name.encode("utf-8"))) % (2**63))
        for start in range(0, flat.numel(), CHUNK):
            part = flat[start : start + CHUNK]
            buckets = torch.randint(0, dim, (part.numel(),), generator=gen)
            signs = torch.randint(0, 2, (part.numel(),), generator=gen).to(torch.float64) * 2.0 - 1.0
            sketch.index_add_(0, buckets, part * signs)
    return sketch.to(torch.float32)


@op("grad_sketch")
def grad_sketch(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {dim? (256), seed? (0)}. Call after forward_backward and before optim_step (which clears gradients).
    Returns frame `sketch` (float32 [dim]) and the gradient's global norm."""
    dim = args.opt_int("dim", 256) or 256
    seed = args.opt_int("seed", 0) or 0
    if not 1 <= dim <= 1 << 20 or seed < 0:
        raise bad_request("dim must be in [1, 2^20] and seed non-negative")
    # Several ranks: the sketch of the global (summed) gradient; the local gradients stay for optim_step to sum.
    grads = distributed.summed_grads(state.settings.dist, state.require_model().model)
    if not grads:
        raise bad_request("no accumulated gradient (run forward_backward first)")
    norm = float(torch.sqrt(sum((g.detach().double() ** 2).sum() for g in grads.values())))
    return Reply({"dim": dim, "grad_norm": norm}, {"sketch": count_sketch(grads, dim, seed)})
