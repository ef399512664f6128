"""Segment attention (segments.py) computes exactly what the dense ancestor mask computes, values and gradients."""
from __future__ import annotations

import random
import unittest
from typing import List

import torch

from harnessrl_worker import segments
from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.packed import PackedRow, pad_batch
from harnessrl_worker.segments import plan_segments

from .helpers import small_config
from .test_packed import pack_paths


def shared_trunk_paths(rng: random.Random, trunk: int, branches: int, branch_len: int) -> List[List[int]]:
    """Paths sharing a trunk, where pairs of branches also share a first stretch (so parents land mid-segment)."""
    base = [rng.randrange(1, 60) for _ in range(trunk)]
    paths = []
    for b in range(branches):
        mid = [rng.randrange(1, 60) for _ in range(branch_len // 2)] if b % 2 == 0 else paths[-1][trunk : trunk + branch_len // 2]
        paths.append(base + list(mid) + [rng.randrange(1, 60) for _ in range(branch_len - len(mid))])
    return paths


def dense_hidden(model: CausalLM, rows: List[PackedRow]) -> List[torch.Tensor]:
    ids, pos, mask = pad_batch(rows, torch.device("cpu"))
    h = model.hidden_states(ids, pos, mask)
    return [h[b, : r.length] for b, r in enumerate(rows)]


def planned_hidden(model: CausalLM, rows: List[PackedRow]) -> List[torch.Tensor]:
    plan = plan_segments([r.parent for r in rows])
    ids = torch.cat([r.tokens for r in rows]).long()
    pos = torch.cat([r.positions for r in rows]).long()
    return list(torch.split(model.hidden_states_planned(ids, pos, plan), [r.length for r in rows]))


class SegmentAttentionTest(unittest.TestCase):
    def setUp(self) -> None:
        rng = random.Random(7)
        tree, _ = pack_paths(shared_trunk_paths(rng, trunk=9, branches=5, branch_len=12))
        flat = PackedRow(torch.tensor([rng.randrange(1, 60) for _ in range(23)]), torch.arange(-1, 22), torch.arange(23))
        # A tree whose node order puts a child right after its parent (one merged segment) and a later sibling whose
        # parent is the middle of that merged segment.
        mid = PackedRow(torch.tensor([3, 4, 5, 6, 7, 8, 9]), torch.tensor([-1, 0, 1, 2, 3, 1, 5]), torch.tensor([0, 1, 2, 3, 4, 2, 3]))
        self.rows = [tree, flat, mid]

    def test_plan_cuts_rows_into_segments_with_their_ancestor_paths(self) -> None:
        plan = plan_segments([self.rows[2].parent, self.rows[1].parent])
        got = [(s.start, s.end, s.ancestors, s.keys.tolist()) for s in plan.segments]
        self.assertEqual(got, [(0, 5, 0, [0, 1, 2, 3, 4]), (5, 7, 2, [0, 1, 5, 6]), (7, 30, 0, list(range(7, 30)))])
        self.assertEqual(plan.total, 30)

    def test_hidden_states_and_gradients_match_the_dense_mask(self) -> None:
        for model_type in ("qwen3", "qwen2"):
            model = CausalLM(small_config(model_type)).double()
            init_weights(model, 3, std=0.2)
            model.double()
            dense = dense_hidden(model, self.rows)
            planned = planned_hidden(model, self.rows)
            for d, p in zip(dense, planned):
                self.assertLess(float((d - p).abs().max()), 1e-10)
            weights = [torch.randn(d.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(i)) for i, d in enumerate(dense)]
            grads = []
            for hs in (dense_hidden, planned_hidden):
                model.zero_grad()
                sum((h * w).sum() for h, w in zip(hs(model, self.rows), weights)).backward()
                grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
            self.assertEqual(set(grads[0]), set(grads[1]))
            for name in grads[0]:
                self.assertLess(float((grads[0][name] - grads[1][name]).abs().max()), 1e-10, name)

    def test_long_segments_split_into_query_blocks_give_the_same_result(self) -> None:
        model = CausalLM(small_config()).double()
        init_weights(model, 4, std=0.2)
        model.double()
        before = planned_hidden(model, self.rows)
        old = segments.QUERY_BLOCK
        segments.QUERY_BLOCK = 4
        try:
            after = planned_hidden(model, self.rows)
        finally:
            segments.QUERY_BLOCK = old
        for a, b in zip(before, after):
            self.assertLess(float((a - b).abs().max()), 1e-12)

    def test_split_pieces_give_the_numbers_of_per_segment_slices(self) -> None:
        # The previous code sliced q/k/v per segment (each slice's backward filled a zero tensor of the whole
        # micro-batch); one split and one key gather must give the same values and gradients (float32), on both the
        # stored and the recomputed path, with and without query blocks.
        plan = plan_segments([r.parent for r in self.rows])
        gen = torch.Generator().manual_seed(11)
        heads, d = 3, 8
        base = [torch.randn(heads, plan.total, d, generator=gen) for _ in range(3)]
        weight = torch.randn(heads, plan.total, d, generator=gen)

        def sliced(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            outs = []
            for seg in plan.segments:
                idx = seg.keys
                ks, vs = (k[:, seg.start : seg.end], v[:, seg.start : seg.end]) if seg.ancestors == 0 else (k.index_select(1, idx), v.index_select(1, idx))
                qs = q[:, seg.start : seg.end]
                if plan.recompute:
                    outs.append(segments._SegmentAttention.apply(qs, ks, vs, seg.ancestors, 0.3, torch.arange(seg.end - seg.start)))
                    continue
                n = seg.end - seg.start
                causal = torch.ones(n, n, dtype=torch.bool).triu_(1)
                scores = torch.matmul(qs, ks.transpose(-1, -2)) * 0.3
                scores[:, :, seg.ancestors :] = scores[:, :, seg.ancestors :].masked_fill(causal, float("-inf"))
                outs.append(torch.matmul(torch.softmax(scores, dim=-1), vs))
            return torch.cat(outs, dim=1)

        old_block = segments.QUERY_BLOCK
        try:
            for recompute, block in ((False, 512), (False, 4), (True, 512), (True, 4)):
                plan.recompute, segments.QUERY_BLOCK = recompute, block
                results = []
                for fn in (sliced, lambda q, k, v: segments.segment_attention(q, k, v, plan, 0.3)):
                    q, k, v = (t.clone().requires_grad_(True) for t in base)
                    out = fn(q, k, v)
                    (out * weight).sum().backward()
                    results.append([out.detach(), q.grad, k.grad, v.grad])
                for name, a, b in zip(("out", "dq", "dk", "dv"), *results):
                    self.assertTrue(torch.allclose(a, b, rtol=1e-5, atol=1e-6), f"{name} recompute={recompute} block={block}: {float((a - b).abs().max())}")
        finally:
            segments.QUERY_BLOCK = old_block


if __name__ == "__main__":
    unittest.main()
