"""`logprobs`: teacher-forced per-token logprobs and entropies for a packed batch (no gradients)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import torch

from .. import distributed
from ..errors import bad_request
from ..packed import PackedRow, packed_scores, split_rows, validate_row
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
    d = state.settings.dist
    if distributed.active(d):
        lp, ent = split_scores(state, rows, temperature, with_entropy, needed)
    else:
        with torch.no_grad():
            scores = packed_scores(loaded.model, rows, temperature, state.settings.token_budget, with_entropy, needed, state.settings.prune_last_layer)
        empty = torch.zeros(0, dtype=torch.float32)
        lp = torch.cat([t.float().cpu() for t in scores.logprobs]) if scores.logprobs else empty
        ent = torch.cat([t.float().cpu() for t in scores.entropy]) if scores.entropy else empty
    out = {"logprobs": lp}
    if with_entropy:
        out["entropy"] = ent
    return Reply({"rows": len(rows), "tokens": int(lp.numel()), "policy_version": cfg.harnessrl.policy_version}, out)


def split_scores(state: WorkerState, rows: List[PackedRow], temperature: float, with_entropy: bool, needed: Optional[List[torch.Tensor]]) -> Tuple[torch.Tensor, torch.Tensor]:
    """Several ranks: each scores its share of the rows (balanced by tokens: the forward pass dominates), writes them
    into zero-filled batch-sized frames, and the sum over ranks is the whole batch's answer."""
    model = state.require_model().model
    mine = distributed.my_rows(state.settings.dist, range(len(rows)), [r.length for r in rows])
    with torch.no_grad():
        scores = packed_scores(model, [rows[i] for i in mine], temperature, state.settings.token_budget, with_entropy, None if needed is None else [needed[i] for i in mine], state.settings.prune_last_layer)
    lp = [torch.zeros(r.length) for r in rows]
    ent = [torch.zeros(r.length if with_entropy else 0) for r in rows]
    for k, i in enumerate(mine):
        lp[i] = scores.logprobs[k].float().cpu()
        if with_entropy:
            ent[i] = scores.entropy[k].float().cpu()
    both = torch.cat([torch.cat(lp) if rows else torch.zeros(0), torch.cat(ent) if rows else torch.zeros(0)])
    distributed.sum_tensor(state.settings.dist, both)
    n = sum(r.length for r in rows)
    return both[:n], both[n:]
