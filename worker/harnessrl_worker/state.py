"""What a worker process holds between requests. Later ops (optimizer, checkpoints) add their own fields here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Optional

import torch

from .errors import WorkerError
from .modeldir import LoadedModel

if TYPE_CHECKING:
    from .distributed import Dist

LONG_ROW_TOKENS = 4096


@dataclass
class WorkerSettings:
    device: torch.device
    threads: int
    # Max rows × padded length per forward pass: bounds the [B, N, N] attention mask and activations.
    token_budget: int = 16384
    # forward_backward recomputes layer activations in backward once a row is at least this long (0 = never).
    grad_checkpoint_tokens: int = 2048
    # forward_backward recomputes attention probabilities in backward instead of storing them once a row's attention
    # extent (longest tree path with segment attention) is at least this long (0 = never): memory then grows
    # linearly with the row, not quadratically (segments._SegmentAttention).
    long_row_tokens: int = LONG_ROW_TOKENS
    # forward_backward forms logits only at trainable tokens, in chunks recomputed in backward (packed._ChunkScores);
    # False = the previous path: logits at every token, kept by autograd (O(tokens × vocab) memory).
    chunked_logits: bool = True
    # Ops that score only some tokens run the last layer only at the positions those tokens read
    # (CausalLM.hidden_states_planned `keep`); False = every position, as before (benchmarks, parity checks).
    prune_last_layer: bool = True
    # Mixed precision: ops run under torch.autocast to this dtype, weights stay as loaded (precision.py); None = off.
    autocast: Optional[torch.dtype] = None
    # Several ranks (torch.distributed; distributed.py); None = this process alone.
    dist: Optional["Dist"] = None


@dataclass
class WorkerState:
    settings: WorkerSettings
    loaded: Optional[LoadedModel] = None
    # Set by `shutdown`; the server stops after answering.
    stopping: bool = False
    # Per-op scratch space for ops added later (e.g. optimizer state), keyed by op family.
    extensions: Dict[str, Any] = field(default_factory=dict)

    def require_model(self) -> LoadedModel:
        if self.loaded is None:
            raise WorkerError("no_model", "no model is loaded (send `init` or `load` first)")
        return self.loaded
