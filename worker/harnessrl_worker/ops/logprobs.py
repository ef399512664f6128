"""`logprobs`: teacher-forced per-token logprobs and entropies for a packed batch (no gradients)."""
from __future__ import annotations

from typing import Dict

import torch

from ..errors import bad_request
from ..packed import packed_scores, split_rows, validate_row
from ..state import WorkerState
from .registry import Args, Reply, frame, op


@op("logprobs")
def logprobs(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {row_lengths: int[], temperature?: number (default 1), entropy?: bool (default true)};
    frames: tokens, parent, positions (int32, rows concatenated), optionally trainable (uint8: score only those tokens,
    0 elsewhere). Returns frames logprobs, entropy (float32, same layout).
    """
    loaded = state.require_model()
    cfg = loaded.config
    rows = split_rows(frame(frames, "tokens", torch.int32), frame(frames, "parent", torch.int32), frame(frames, "positions", torch.int32), args.int_list("row_lengths"))
    for i, r in enumerate(rows):
        validate_row(r, cfg.vocab_size, cfg.max_position_embeddings, i)
    t = args.opt_float("temperature")
    temperature = 1.0 if t is None else t
    with_entropy = args.opt_bool("entropy", True)
    needed = None
    if "trainable" in frames:
        # Only these tokens are scored (the rest get 0): a long shared prompt costs no output projection.
        mask = frame(frames, "trainable", torch.uint8).bool()
        lengths = [r.length for r in rows]
        if mask.shape != (sum(lengths),):
            raise bad_request(f"frame 'trainable' must have one entry per token ({sum(lengths)})")
        needed = list(torch.split(mask, lengths))
    with torch.no_grad():
        scores = packed_scores(loaded.model, rows, temperature, state.settings.token_budget, with_entropy, needed)
    empty = torch.zeros(0, dtype=torch.float32)
    lp = torch.cat([t.float().cpu() for t in scores.logprobs]) if scores.logprobs else empty
    ent = torch.cat([t.float().cpu() for t in scores.entropy]) if scores.entropy else empty
    out = {"logprobs": lp}
    if with_entropy:
        out["entropy"] = ent
    return Reply({"rows": len(rows), "tokens": int(lp.numel()), "policy_version": cfg.harnessrl.policy_version}, out)
