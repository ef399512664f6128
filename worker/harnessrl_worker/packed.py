"""Packed prefix-tree rows: validation, attention masks, micro-batching, and per-token logprobs/entropy.

A row is a flat token list with parent pointers (parent[i] < i, -1 for roots) and position ids (depth on the path).
Token i attends to j iff j is i or an ancestor of i. The logprob of token i is read from the logits at parent[i], so
each root-to-leaf path gets exactly the numbers it would get if run alone. src/batch/types.ts is the TypeScript side.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

from .errors import bad_request
from .model import CausalLM
from .segments import plan_segments


@dataclass
class PackedRow:
    tokens: torch.Tensor  # int64 [N]
    parent: torch.Tensor  # int64 [N]
    positions: torch.Tensor  # int64 [N]

    @property
    def length(self) -> int:
        return int(self.tokens.shape[0])


@dataclass
class TokenScores:
    """Per-row outputs, aligned with the row's tokens (roots: logprob 0, entropy 0)."""

    logprobs: List[torch.Tensor]
    entropy: List[torch.Tensor]


def split_rows(tokens: torch.Tensor, parent: torch.Tensor, positions: torch.Tensor, row_lengths: Sequence[int]) -> List[PackedRow]:
    """Splits concatenated arrays (the wire layout) into rows."""
    total = sum(row_lengths)
    if any(n < 0 for n in row_lengths):
        raise bad_request("row lengths must be non-negative")
    for name, t in (("tokens", tokens), ("parent", parent), ("positions", positions)):
        if t.dim() != 1 or t.shape[0] != total:
            raise bad_request(f"{name} has {t.numel()} elements, row lengths sum to {total}")
    rows: List[PackedRow] = []
    start = 0
    for n in row_lengths:
        rows.append(PackedRow(tokens[start : start + n].long(), parent[start : start + n].long(), positions[start : start + n].long()))
        start += n
    return rows


def validate_row(row: PackedRow, vocab_size: int, max_positions: Optional[int], index: int) -> None:
    n = row.length
    if n == 0:
        return
    idx = torch.arange(n)
    if bool(((row.parent < -1) | (row.parent >= idx)).any()):
        raise bad_request(f"row {index}: every parent must be -1 or an earlier index")
    if bool(((row.tokens < 0) | (row.tokens >= vocab_size)).any()):
        raise bad_request(f"row {index}: token ids must lie in [0, {vocab_size})")
    has_parent = row.parent >= 0
    parent_pos = row.positions[row.parent.clamp(min=0)]
    if bool((has_parent & (row.positions != parent_pos + 1)).any()):
        raise bad_request(f"row {index}: positions must be the parent's position + 1")
    if bool((row.positions < 0).any()):
        raise bad_request(f"row {index}: positions must be non-negative")
    if max_positions is not None and int(row.positions.max()) >= max_positions:
        raise bad_request(f"row {index}: position {int(row.positions.max())} exceeds the model's context ({max_positions})")


def is_flat(parent: torch.Tensor) -> bool:
    n = parent.shape[0]
    return bool(torch.equal(parent, torch.arange(-1, n - 1, dtype=parent.dtype)))


def ancestor_mask(parent: torch.Tensor) -> torch.Tensor:
    """[N, N] bool: mask[i, j] iff j is i or an ancestor of i."""
    n = parent.shape[0]
    if is_flat(parent):
        return torch.ones(n, n, dtype=torch.bool).tril_()
    mask = torch.zeros(n, n, dtype=torch.bool)
    # Parents precede children, and all ancestors of p have index <= p: copy p's row prefix, then add self.
    for i, p in enumerate(parent.tolist()):
        if p >= 0:
            mask[i, : p + 1] = mask[p, : p + 1]
        mask[i, i] = True
    return mask


def micro_batches(lengths: Sequence[int], token_budget: int) -> List[List[int]]:
    """Groups row indices (longest first) so that rows × padded length stays within the budget (one row always fits)."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    groups: List[List[int]] = []
    current: List[int] = []
    width = 0
    for i in order:
        n = max(lengths[i], 1)
        w = max(width, n)
        if current and w * (len(current) + 1) > token_budget:
            groups.append(current)
            current, width = [], 0
            w = n
        current.append(i)
        width = w
    if current:
        groups.append(current)
    return groups


def pad_batch(rows: Sequence[PackedRow], device: torch.device) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token ids [B, N], positions [B, N] and attention mask [B, N, N]; a padding slot attends only to itself."""
    width = max(max(r.length for r in rows), 1)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    pos = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.eye(width, dtype=torch.bool).repeat(len(rows), 1, 1)
    for b, r in enumerate(rows):
        n = r.length
        ids[b, :n] = r.tokens
        pos[b, :n] = r.positions
        mask[b, :n, :n] = ancestor_mask(r.parent)
    return ids.to(device), pos.to(device), mask.to(device)


# Log-probabilities below this have probability exactly 0 in float32 and float64 alike (exp underflows past ~-745):
# entropy terms clamp log p here so that a masked id's lowest-finite log p, times an entropy weight |w| >= 1, cannot
# overflow to -inf and turn -inf · 0 into NaN in every gradient.
LOGP_FLOOR = -1e4

# Long-row scoring forms at most this many logits at once (256 MiB in float32: ~440 positions of a 152k vocabulary).
LOGIT_CHUNK_ELEMENTS = 1 << 26


def mask_textless(z: torch.Tensor, textless: Optional[torch.Tensor]) -> torch.Tensor:
    """Logits of ids without text (CausalLM.restrict_vocab) set to the dtype's lowest finite value, in place: their
    probability is exactly 0 as in the engines, and p·log p stays 0 where −inf would make the entropy NaN."""
    if textless is None:
        return z
    return z.index_fill_(-1, textless.to(z.device), torch.finfo(z.dtype).min)


def _scaled_logits(hidden: torch.Tensor, weight: torch.Tensor, temperature: float, dtype: torch.dtype, textless: Optional[torch.Tensor]) -> torch.Tensor:
    z = F.linear(hidden, weight).to(dtype)
    return mask_textless(z if temperature == 1.0 else z.div_(temperature), textless)


class _ChunkScores(torch.autograd.Function):
    """Logprob of the target and entropy at each of a chunk of positions (hidden [C, H], output weight [V, H]), keeping
    only hidden, the log-sum-exp and the entropy for backward, where the [C, V] logits are recomputed once.

    With log p = z − lse and H = −Σ p log p:  ∂log p_t/∂z = onehot(t) − p  and  ∂H/∂z = −p ⊙ (log p + H).
    Every pass over a [C, V] tensor counts (a Qwen3 vocabulary makes them the step's largest after the matmuls), so
    forward takes one exp (H = log s − Σ e z′ / s with z′ = z − max, e = exp z′, s = Σ e), and backward skips the
    entropy term when nothing uses the entropy's gradient (SFT, pg without an entropy bonus).
    """

    @staticmethod
    def forward(ctx, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, temperature: float, dtype: torch.dtype, textless: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        z = _scaled_logits(hidden, weight, temperature, dtype, textless)
        m = z.amax(dim=-1, keepdim=True)
        shifted = z.sub_(m)
        e = shifted.exp()
        total = e.sum(-1)
        log_total = total.log()
        lse = log_total + m.squeeze(1)
        lp = shifted.gather(1, targets[:, None]).squeeze(1) - log_total
        # Σ e z′ per row as a batched dot product: no [C, V] product tensor.
        ent = log_total - torch.bmm(e.unsqueeze(1), shifted.unsqueeze(2)).view(-1) / total
        ctx.save_for_backward(hidden, weight, targets, lse, ent)
        ctx.temperature, ctx.dtype, ctx.textless = temperature, dtype, textless
        # An unused output's gradient arrives as None instead of a tensor of zeros (see backward).
        ctx.set_materialize_grads(False)
        return lp, ent

    @staticmethod
    def backward(ctx, g_lp: Optional[torch.Tensor], g_ent: Optional[torch.Tensor]):  # type: ignore[override]
        hidden, weight, targets, lse, ent = ctx.saved_tensors
        if g_lp is None and g_ent is None:
            return None, None, None, None, None, None
        if g_lp is None:
            g_lp = torch.zeros_like(lse)
        logp = _scaled_logits(hidden, weight, ctx.temperature, ctx.dtype, ctx.textless).sub_(lse[:, None])
        if g_ent is None:
            # grad_z = −p · g_lp + g_lp · onehot(target), in place over logp.
            grad = logp.exp_().mul_(-g_lp[:, None])
        else:
            p = logp.exp()
            # grad_z = −p ⊙ (g_lp + g_ent · (log p + H)) + g_lp · onehot(target), built in place over logp.
            grad = logp.clamp_(min=LOGP_FLOOR).add_(ent[:, None]).mul_(g_ent[:, None]).add_(g_lp[:, None]).mul_(p).neg_()
        grad.scatter_add_(1, targets[:, None], g_lp[:, None])
        if ctx.temperature != 1.0:
            grad.div_(ctx.temperature)
        grad = grad.to(hidden.dtype)
        d_hidden = torch.matmul(grad, weight) if ctx.needs_input_grad[0] else None
        d_weight = torch.matmul(grad.transpose(0, 1), hidden) if ctx.needs_input_grad[1] else None
        return d_hidden, d_weight, None, None, None, None


def _chunk_scores(model: CausalLM, hidden: torch.Tensor, targets: torch.Tensor, temperature: float, dtype: torch.dtype, with_entropy: bool) -> Tuple[torch.Tensor, torch.Tensor]:
    logp = F.log_softmax(mask_textless(model.logits(hidden).to(dtype) / temperature, model.textless), dim=-1)
    lp = logp.gather(1, targets[:, None]).squeeze(1)
    ent = -(logp.exp() * logp.clamp(min=LOGP_FLOOR)).sum(-1) if with_entropy else torch.zeros_like(lp)
    return lp, ent


def score_tokens(
    model: CausalLM,
    hidden: torch.Tensor,
    row: PackedRow,
    temperature: float,
    chunk: int = 4096,
    with_entropy: bool = True,
    needed: Optional[torch.Tensor] = None,
    recompute: bool = False,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Logprob and entropy for every token of one row from its hidden states [N, H] (differentiable).

    Logits are formed only at parent positions and in chunks, so a 150k vocabulary does not need an N×V tensor at once
    when gradients are off. `needed` (bool [N]) restricts scoring to those tokens (the others get 0): a GRPO row's
    shared prompt costs no output projection. `recompute` (long rows) sizes chunks by LOGIT_CHUNK_ELEMENTS and
    recomputes each chunk's logits in backward instead of keeping them (_ChunkScores): the vocabulary costs
    O(chunk × V) memory instead of O(scored tokens × V), in fewer passes over the logits than autograd's.
    """
    n = row.length
    device = hidden.device
    # Half-precision logits are upcast; float32/float64 models keep their precision (float64 for gradient checks).
    dtype = torch.float64 if hidden.dtype == torch.float64 else torch.float32
    logprobs = torch.zeros(n, dtype=dtype, device=device)
    entropy = torch.zeros(n, dtype=dtype, device=device)
    parent = row.parent.to(device)
    targets = row.tokens.to(device)
    scored = parent >= 0
    if needed is not None:
        scored = scored & needed.to(device=device, dtype=torch.bool)
    child = torch.nonzero(scored).flatten()
    # Rows cut off the output projection (CausalLM.restrict_vocab) have no logit: no engine samples such an id.
    if child.numel() > 0 and int(targets[child].max()) >= model.sampled_rows:
        raise bad_request(f"token id {int(targets[child].max())} has no text in the model's tokenizer (ids ≥ {model.sampled_rows}); engines never sample it")
    if recompute:
        chunk = max(1, LOGIT_CHUNK_ELEMENTS // model.config.vocab_size)
    lp_parts: List[torch.Tensor] = []
    ent_parts: List[torch.Tensor] = []
    for s in range(0, child.numel(), chunk):
        c = child[s : s + chunk]
        if recompute:
            lp, ent = _ChunkScores.apply(hidden[parent[c]], model.output_weight(), targets[c], float(temperature), dtype, model.textless)
        else:
            lp, ent = _chunk_scores(model, hidden[parent[c]], targets[c], temperature, dtype, with_entropy)
        lp_parts.append(lp)
        ent_parts.append(ent)
    if lp_parts:
        logprobs = logprobs.index_put((child,), torch.cat(lp_parts))
        if with_entropy:
            entropy = entropy.index_put((child,), torch.cat(ent_parts))
    return logprobs, entropy


def packed_micro_batches(lengths: Sequence[int], token_budget: int) -> List[List[int]]:
    """Groups row indices in order so that the rows' total tokens stay within the budget (one row always fits)."""
    groups: List[List[int]] = []
    current: List[int] = []
    used = 0
    for i, n in enumerate(lengths):
        if current and used + n > token_budget:
            groups.append(current)
            current, used = [], 0
        current.append(i)
        used += n
    if current:
        groups.append(current)
    return groups


def scored_parents(rows: Sequence[PackedRow], needed: Sequence[torch.Tensor]) -> torch.Tensor:
    """Sorted unique indices (into the rows concatenated) of the hidden states that score_tokens reads when it
    scores only the `needed` tokens: each scored token's parent."""
    parts: List[torch.Tensor] = []
    offset = 0
    for row, need in zip(rows, needed):
        scored = (row.parent >= 0) & need.to("cpu", torch.bool)
        parts.append(torch.unique(row.parent[scored]) + offset)
        offset += row.length
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)


def forward_micro_batches(
    model: CausalLM, rows: Sequence[PackedRow], token_budget: int, recompute: bool = False, needed: Optional[Sequence[torch.Tensor]] = None
) -> Iterator[Tuple[List[int], List[torch.Tensor]]]:
    """Runs the model over rows in micro-batches; yields (row indices, hidden states [N_i, H] per row).

    With `attention="auto"` rows are concatenated without padding and attention follows each token's tree path
    (segments.py); "eager"/"sdpa" pad rows and use a dense [B, N, N] ancestor mask. Training ops backpropagate each
    micro-batch before the next is computed, so memory stays bounded by the budget. `recompute` (segment attention
    only) keeps no attention probabilities for backward: long rows need O(N × block) instead of O(N²) memory.
    `needed` (bool per token, per row; segment attention only): the caller scores only those tokens, so only their
    parents' hidden states are computed in the last layer (CausalLM.hidden_states_planned `keep`); the other hidden
    states are zeros and must not be read.
    """
    device = next(model.parameters()).device
    if model.attention == "auto":
        for group in packed_micro_batches([r.length for r in rows], token_budget):
            chosen = [rows[i] for i in group]
            plan = plan_segments([r.parent for r in chosen], recompute)
            if plan.total == 0:
                yield group, [torch.zeros(0, model.config.hidden_size, device=device) for _ in chosen]
                continue
            ids = torch.cat([r.tokens for r in chosen]).long().to(device)
            pos = torch.cat([r.positions for r in chosen]).long().to(device)
            keep = None if needed is None else scored_parents(chosen, [needed[i] for i in group])
            hidden = model.hidden_states_planned(ids, pos, plan, keep)
            yield group, list(torch.split(hidden, [r.length for r in chosen]))
        return
    for group in micro_batches([r.length for r in rows], token_budget):
        ids, pos, mask = pad_batch([rows[i] for i in group], device)
        hidden = model.hidden_states(ids, pos, mask)
        yield group, [hidden[b, : rows[i].length] for b, i in enumerate(group)]


def packed_scores(
    model: CausalLM,
    rows: Sequence[PackedRow],
    temperature: float = 1.0,
    token_budget: int = 16384,
    with_entropy: bool = True,
    needed: Optional[Sequence[torch.Tensor]] = None,
    prune_last_layer: bool = True,
) -> TokenScores:
    """Teacher-forced per-token logprobs (at temperature T: log_softmax(logits / T)) and entropies for packed rows;
    with `needed` (bool per token, per row) only those tokens are scored, and (unless `prune_last_layer` is off)
    the last layer runs only where they read it. Without gradients only one chunk of logits lives at a time, so
    chunks are sized to LOGIT_CHUNK_ELEMENTS (a large vocabulary gets short chunks)."""
    if not temperature > 0:
        raise bad_request("temperature must be > 0")
    out_lp: List[Optional[torch.Tensor]] = [None] * len(rows)
    out_ent: List[Optional[torch.Tensor]] = [None] * len(rows)
    for group, hidden in forward_micro_batches(model, rows, token_budget, needed=needed if prune_last_layer else None):
        for b, i in enumerate(group):
            chunk = max(1, min(4096, LOGIT_CHUNK_ELEMENTS // model.config.vocab_size))
            lp, ent = score_tokens(model, hidden[b], rows[i], temperature, chunk, with_entropy, None if needed is None else needed[i])
            out_lp[i], out_ent[i] = lp, ent
    return TokenScores([t for t in out_lp if t is not None], [t for t in out_ent if t is not None])
