"""Segment attention: exact attention over packed prefix trees without an [N, N] mask.

A packed row (packed.py) is cut into segments: maximal runs of consecutive tokens where each token's parent is the
token just before it. Every token of a segment sees the same ancestors (the path to the segment's first parent) plus
the segment's own earlier tokens, so one segment is one dense attention block: queries = the segment, keys = its
ancestor path followed by itself, causal only on the second part.

Cost is Σ |segment| × (|ancestors| + |segment|) instead of N² per row, and no padding: a shared system prompt in a
row of many rollouts is computed once and only read as keys by every continuation. This is what makes large
tree-packed rows cheaper than flat rows on CPU, where the masked dense [N, N] path spends most of its time on
masked-out scores.

With gradients, the default path keeps every block's probabilities for backward: Σ heads × |segment| × |keys| floats
per layer, quadratic in the row. `SegmentPlan.recompute` (long rows, see packed.forward_micro_batches) switches to
`_SegmentAttention`, which keeps only q, k, v, the output and one log-sum-exp per query and recomputes each block's
probabilities in backward (the flash-attention recurrence, in plain torch), so memory stays O(heads × block × keys).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import torch


@dataclass
class Segment:
    start: int  # first token, index into the concatenated micro-batch
    end: int  # one past the last token
    keys: torch.Tensor  # int64 [ancestors + own]: indices into the concatenated micro-batch
    ancestors: int  # number of leading keys that are ancestors (visible to every query)


@dataclass
class SegmentPlan:
    total: int
    segments: List[Segment]
    # Additive causal biases keyed by (ancestors, length), shared between segments and layers.
    biases: Dict[Tuple[int, int], torch.Tensor]
    # Recompute attention probabilities in backward instead of storing them (long rows; same numbers).
    recompute: bool = False
    # Every segment's keys concatenated (None when no segment has ancestors: then keys are the segments themselves).
    key_index: Optional[torch.Tensor] = None

    def pieces(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> Tuple[Sequence[torch.Tensor], Sequence[torch.Tensor], Sequence[torch.Tensor]]:
        """Per segment: its queries, keys and values ([heads, ·, d]). One split (and at most one index_select) for all
        segments, not a slice per segment: autograd's backward of a slice writes into a zero tensor as large as the
        whole micro-batch, so per-segment slices cost O(segments × tokens) in backward (half the step of 23 flat rows)."""
        ks, vs = self.key_pieces(k, v)
        return q.split([seg.end - seg.start for seg in self.segments], dim=1), ks, vs

    def key_pieces(self, k: torch.Tensor, v: torch.Tensor) -> Tuple[Sequence[torch.Tensor], Sequence[torch.Tensor]]:
        """Per segment: its keys and values (ancestors, then its own tokens), as in `pieces`."""
        if self.key_index is None:
            lengths = [seg.end - seg.start for seg in self.segments]
            return k.split(lengths, dim=1), v.split(lengths, dim=1)
        idx = self.key_index.to(k.device)
        widths = [int(seg.keys.shape[0]) for seg in self.segments]
        return k.index_select(1, idx).split(widths, dim=1), v.index_select(1, idx).split(widths, dim=1)

    def kept_queries(self, keep: torch.Tensor) -> "KeptQueries":
        """Splits `keep` (sorted unique token indices into the micro-batch) by segment."""
        keep = keep.to("cpu", torch.long)
        starts = torch.tensor([seg.start for seg in self.segments], dtype=torch.long)
        ends = torch.tensor([seg.end for seg in self.segments], dtype=torch.long)
        lo = torch.searchsorted(keep, starts).tolist()
        hi = torch.searchsorted(keep, ends).tolist()
        local = [keep[a:b] - seg.start for seg, a, b in zip(self.segments, lo, hi)]
        return KeptQueries(keep, [b - a for a, b in zip(lo, hi)], local)

    def bias(self, seg: Segment, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        length = seg.end - seg.start
        key = (seg.ancestors, length)
        b = self.biases.get(key)
        if b is None or b.dtype != dtype or b.device != device:
            causal = torch.ones(length, length, dtype=torch.bool, device=device).triu_(1)
            b = torch.zeros(length, seg.ancestors + length, dtype=dtype, device=device)
            b[:, seg.ancestors :].masked_fill_(causal, torch.finfo(dtype).min)
            self.biases[key] = b
        return b


@dataclass
class KeptQueries:
    """The queries the last layer computes (CausalLM.hidden_states_planned with `keep`): only the positions whose
    hidden state feeds a scored token's logits. Every earlier layer still runs at every position (later tokens read
    them as keys), but the last layer's output at position i reaches nothing but the logits at i."""

    index: torch.Tensor  # int64 [K]: sorted token indices into the micro-batch
    counts: List[int]  # per segment: how many kept queries lie in it
    local: List[torch.Tensor]  # per segment: their positions within the segment (int64, ascending)


def plan_segments(parents: Sequence[torch.Tensor], recompute: bool = False) -> SegmentPlan:
    """Plans the rows (parent pointers per row, parent[i] < i or -1) as they lie concatenated in one micro-batch."""
    segments: List[Segment] = []
    offset = 0
    for parent in parents:
        n = int(parent.shape[0])
        if n == 0:
            continue
        p = parent.tolist()
        starts = [i for i in range(n) if i == 0 or p[i] != i - 1]
        ends = starts[1:] + [n]
        # seg_of[i]: which segment (local index) token i belongs to; ranges[s]: the key ranges of segment s's path.
        seg_of = [0] * n
        paths: List[List[Tuple[int, int]]] = []
        for s, (a, b) in enumerate(zip(starts, ends)):
            for i in range(a, b):
                seg_of[i] = s
            parent_token = p[a]
            if parent_token < 0:
                path: List[Tuple[int, int]] = []
            else:
                ps = seg_of[parent_token]
                # The parent's own path, then its segment up to and including the parent token.
                path = paths[ps] + [(starts[ps], parent_token + 1)]
            paths.append(path)
            ancestors = sum(hi - lo for lo, hi in path)
            ranges = path + [(a, b)]
            keys = torch.cat([torch.arange(lo + offset, hi + offset) for lo, hi in ranges])
            segments.append(Segment(a + offset, b + offset, keys, ancestors))
        offset += n
    key_index = torch.cat([seg.keys for seg in segments]) if any(seg.ancestors for seg in segments) else None
    return SegmentPlan(offset, segments, {}, recompute, key_index)


# Long segments are computed in query blocks: each block reads keys only up to its own last token, which skips the
# scores above the causal diagonal and bounds the transient [heads, block, keys] tensors.
QUERY_BLOCK = 512


def segment_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: SegmentPlan, scale: float) -> torch.Tensor:
    """q [heads, T, d], k/v [heads, T, d] (key/value heads already repeated) → [heads, T, d]; exact per segment."""
    if plan.recompute and torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        return _recomputed_attention(q, k, v, plan, scale)
    outs: List[torch.Tensor] = []
    softmax_dtype = torch.promote_types(q.dtype, torch.float32)
    for seg, qs, ks, vs in zip(plan.segments, *plan.pieces(q, k, v)):
        bias = plan.bias(seg, q.dtype, q.device)
        length = seg.end - seg.start
        if length <= QUERY_BLOCK:
            # One block: no slices (each would add a backward node that copies into a zero tensor).
            scores = torch.matmul(qs, ks.transpose(-1, -2)) * scale + bias
            outs.append(torch.matmul(torch.softmax(scores, dim=-1, dtype=softmax_dtype).to(q.dtype), vs))
            continue
        for s in range(0, length, QUERY_BLOCK):
            e = min(s + QUERY_BLOCK, length)
            width = seg.ancestors + e
            scores = torch.matmul(qs[:, s:e], ks[:, :width].transpose(-1, -2)) * scale + bias[s:e, :width]
            probs = torch.softmax(scores, dim=-1, dtype=softmax_dtype).to(q.dtype)
            outs.append(torch.matmul(probs, vs[:, :width]))
    return outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)


def _block_scores(qs: torch.Tensor, k: torch.Tensor, ancestors: int, qpos: torch.Tensor, s: int, e: int) -> Tuple[torch.Tensor, int]:
    """Scores [heads, e - s, width] of queries s..e (q pre-scaled; `qpos` their positions within the segment,
    ascending) in the softmax dtype, -inf where a key lies after the query; width = the keys the block's last query
    sees. Keys before the block's first query are visible to all of it, so only the columns from there are masked
    (for consecutive queries: the last [e - s, e - s] tile)."""
    first, last = int(qpos[s]), int(qpos[e - 1])
    width = ancestors + last + 1
    scores = torch.matmul(qs[:, s:e], k[:, :width].transpose(-1, -2))
    sdt = torch.promote_types(qs.dtype, torch.float32)
    if scores.dtype != sdt:
        scores = scores.to(sdt)
    cols = torch.arange(first, last + 1, device=qs.device)
    after = cols[None, :] > qpos[s:e, None].to(qs.device)
    scores[:, :, ancestors + first :].masked_fill_(after, float("-inf"))
    return scores, width


class _SegmentAttention(torch.autograd.Function):
    """One segment's attention (q [heads, Q, d] at positions `qpos` within the segment, keys/values
    [heads, ancestors + L, d]) that saves no probabilities.

    Every pass over a [heads, block, keys] tensor counts on a CPU, so they are done in place: forward takes the row
    max, exponentiates, and divides the (small) output by the row sum instead of normalising the probabilities."""

    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, ancestors: int, scale: float, qpos: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        n_q = q.shape[1]
        qs = q * scale
        out = torch.empty_like(q)
        lse = torch.empty(q.shape[0], n_q, dtype=torch.promote_types(q.dtype, torch.float32), device=q.device)
        for s in range(0, n_q, QUERY_BLOCK):
            e = min(s + QUERY_BLOCK, n_q)
            scores, width = _block_scores(qs, k, ancestors, qpos, s, e)
            m = scores.amax(dim=-1, keepdim=True)
            weights = scores.sub_(m).exp_()
            total = weights.sum(dim=-1, keepdim=True)
            out[:, s:e] = (torch.matmul(weights.to(q.dtype), v[:, :width]) / total).to(q.dtype)
            lse[:, s:e] = (m + total.log()).squeeze(-1)
        ctx.save_for_backward(qs, k, v, out, lse, qpos)
        ctx.ancestors, ctx.scale = ancestors, scale
        return out

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):  # type: ignore[override]
        qs, k, v, out, lse, qpos = ctx.saved_tensors
        ancestors, scale = ctx.ancestors, ctx.scale
        sdt = lse.dtype
        dq, dk, dv = torch.zeros_like(qs), torch.zeros_like(k), torch.zeros_like(v)
        grad_out = grad_out.contiguous()
        # D_i = Σ_j P_ij dP_ij = dO_i · O_i: the softmax backward's row term, computed once.
        delta = (grad_out.to(sdt) * out.to(sdt)).sum(-1, keepdim=True)
        n_q = qs.shape[1]
        for s in range(0, n_q, QUERY_BLOCK):
            e = min(s + QUERY_BLOCK, n_q)
            scores, width = _block_scores(qs, k, ancestors, qpos, s, e)
            probs = scores.sub_(lse[:, s:e, None]).exp_()
            go = grad_out[:, s:e]
            dv[:, :width] += torch.matmul(probs.to(v.dtype).transpose(-1, -2), go)
            # dS = P ⊙ (dP − D), in place over dP.
            ds = torch.matmul(go, v[:, :width].transpose(-1, -2)).to(sdt).sub_(delta[:, s:e]).mul_(probs).to(qs.dtype)
            dq[:, s:e] = torch.matmul(ds, k[:, :width])
            dk[:, :width] += torch.matmul(ds.transpose(-1, -2), qs[:, s:e])
        # scores = (q · scale) kᵀ: the scale lands on dq; dk already used the scaled q.
        return dq.mul_(scale), dk, dv, None, None, None


def _recomputed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: SegmentPlan, scale: float) -> torch.Tensor:
    outs: List[torch.Tensor] = []
    for seg, qs, ks, vs in zip(plan.segments, *plan.pieces(q, k, v)):
        # Query positions stay on the CPU: each block reads its first and last as Python ints (no device sync).
        qpos = torch.arange(seg.end - seg.start)
        outs.append(_SegmentAttention.apply(qs, ks, vs, seg.ancestors, scale, qpos))
    return outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)


def kept_segment_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, plan: SegmentPlan, kept: KeptQueries, scale: float) -> torch.Tensor:
    """Attention for the kept queries only: q [heads, K, d] (the kept positions, in order), k/v [heads, T, d] for the
    whole micro-batch → [heads, K, d]; each query sees exactly what it sees in `segment_attention`."""
    recompute = plan.recompute and torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
    outs: List[torch.Tensor] = []
    for seg, qs, ks, vs, qpos in zip(plan.segments, q.split(kept.counts, dim=1), *plan.key_pieces(k, v), kept.local):
        if qs.shape[1] == 0:
            continue
        if recompute:
            outs.append(_SegmentAttention.apply(qs, ks, vs, seg.ancestors, scale, qpos))
            continue
        # Few queries: keeping their probabilities for backward is what the short-row path does as well.
        scaled = qs * scale
        for s in range(0, qs.shape[1], QUERY_BLOCK):
            e = min(s + QUERY_BLOCK, qs.shape[1])
            scores, width = _block_scores(scaled, ks, seg.ancestors, qpos, s, e)
            outs.append(torch.matmul(torch.softmax(scores, dim=-1).to(q.dtype), vs[:, :width]))
    if not outs:
        return q.new_zeros(q.shape)
    return outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)
