"""Policy-gradient frames of synthetic packed batches, for the benchmarks, the accelerator check and the tests: the
tensors the TypeScript side sends with a `forward_backward`, built from plain per-token lists."""
from __future__ import annotations

from typing import Dict, List, Tuple

import torch


def policy_frames(tokens: List[int], parent: List[int], positions: List[int], trainable: List[int], gen: torch.Generator, old_logprobs: Tuple[float, float] = (1.0, 5.0)) -> Dict[str, torch.Tensor]:
    """The packed rows' frames with random old logprobs (uniform in −hi..−lo), standard-normal advantages and the
    token-mean loss weights over the whole batch (as the TypeScript side computes them). Draws from `gen` in that
    order: old logprobs, then advantages."""
    total = len(tokens)
    lo, hi = old_logprobs
    return {
        "tokens": torch.tensor(tokens, dtype=torch.int32),
        "parent": torch.tensor(parent, dtype=torch.int32),
        "positions": torch.tensor(positions, dtype=torch.int32),
        "trainable": torch.tensor(trainable, dtype=torch.uint8),
        "old_logprobs": -(torch.rand(total, generator=gen) * (hi - lo) + lo),
        "advantages": torch.randn(total, generator=gen),
        "loss_weights": torch.full((total,), 1.0 / sum(trainable)),
    }
