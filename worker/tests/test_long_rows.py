"""The long-row path (recomputed attention and logits, scoring only trainable tokens) gives the same logprobs and
gradients as the unchunked paths on rows small enough for both: the dense padded ancestor mask ("eager") and the
default segment attention that stores its probabilities."""
from __future__ import annotations

import random
import unittest
from typing import Dict, List, Tuple

import torch
import torch.nn.functional as F

from harnessrl_worker import packed, segments
from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.modeldir import LoadedModel
from harnessrl_worker.packed import PackedRow, forward_micro_batches, score_tokens
from harnessrl_worker.state import WorkerSettings, WorkerState

from .helpers import small_config
from .test_packed import flat_row, pack_paths
from .test_train import batch_frames, call

Grads = Dict[str, torch.Tensor]


def tree_rows(rng: random.Random) -> List[PackedRow]:
    """A GRPO-like row (one prompt, branching completions, a second root), a flat row, and a short row (padding)."""
    prompt = [rng.randrange(1, 60) for _ in range(17)]
    mid = [rng.randrange(1, 60) for _ in range(5)]
    paths = [
        prompt + mid + [rng.randrange(1, 60) for _ in range(9)],
        prompt + mid + [rng.randrange(1, 60) for _ in range(6)],
        prompt + [rng.randrange(1, 60) for _ in range(11)],
        [rng.randrange(1, 60) for _ in range(8)],  # a second tree in the same row
    ]
    tree, _ = pack_paths(paths)
    return [tree, flat_row([rng.randrange(1, 60) for _ in range(29)]), flat_row([rng.randrange(1, 60) for _ in range(5)])]


def trainable_masks(rows: List[PackedRow], rng: random.Random) -> List[torch.Tensor]:
    # Roots are never scored; about two thirds of the rest are trainable, like completions after a prompt.
    return [torch.tensor([p >= 0 and rng.random() < 0.67 for p in r.parent.tolist()]) for r in rows]


def loss_and_grads(model: CausalLM, rows: List[PackedRow], train: List[torch.Tensor], long_rows: bool, prune: bool = False) -> Tuple[List[torch.Tensor], Grads]:
    """Σ weight · logprob + Σ weight' · entropy over trainable tokens, backpropagated one micro-batch at a time (as
    forward_backward does); returns the logprobs at trainable tokens and the parameter gradients. `prune`: only the
    trainable tokens are scored and the last layer runs only where they read it (test_last_layer.py)."""
    model.zero_grad()
    gen = torch.Generator().manual_seed(5)
    weights = [torch.randn(r.length, 2, generator=gen, dtype=torch.float64) for r in rows]
    out: List[torch.Tensor] = [torch.zeros(0)] * len(rows)
    for group, hidden in forward_micro_batches(model, rows, token_budget=64, recompute=long_rows, needed=train if prune else None):
        total = torch.zeros((), dtype=torch.float64)
        for b, i in enumerate(group):
            lp, ent = score_tokens(model, hidden[b], rows[i], 0.8, needed=train[i] if long_rows or prune else None, recompute=long_rows)
            mask = train[i].to(lp.dtype)
            total = total + (lp * mask * weights[i][:, 0].to(lp.dtype)).sum() + (ent * mask * weights[i][:, 1].to(lp.dtype)).sum()
            out[i] = lp.detach()[train[i]]
        total.backward()
    return out, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


class LongRowPathTest(unittest.TestCase):
    def setUp(self) -> None:
        rng = random.Random(11)
        self.rows = tree_rows(rng)
        self.train = trainable_masks(self.rows, rng)
        # Small blocks and logit chunks so every row spans several of each.
        self.saved = (segments.QUERY_BLOCK, packed.LOGIT_CHUNK_ELEMENTS)
        segments.QUERY_BLOCK = 4
        packed.LOGIT_CHUNK_ELEMENTS = 61 * 7

    def tearDown(self) -> None:
        segments.QUERY_BLOCK, packed.LOGIT_CHUNK_ELEMENTS = self.saved

    def compare(self, a: Tuple[List[torch.Tensor], Grads], b: Tuple[List[torch.Tensor], Grads], tol: float, what: str) -> None:
        for x, y in zip(a[0], b[0]):
            self.assertEqual(x.shape, y.shape)
            self.assertLess(float((x - y).abs().max()), tol, f"{what}: logprobs")
        self.assertEqual(set(a[1]), set(b[1]))
        for name in a[1]:
            scale = float(b[1][name].abs().max()) + 1e-12
            self.assertLess(float((a[1][name] - b[1][name]).abs().max()) / scale, tol, f"{what}: {name}")

    def test_gradients_match_the_dense_and_stored_paths_for_qwen2_and_qwen3_tied_and_untied(self) -> None:
        for model_type in ("qwen3", "qwen2"):
            for tied in (True, False):
                for dtype, tol in ((torch.float64, 1e-10), (torch.float32, 1e-4)):
                    what = f"{model_type} tied={tied} {dtype}"
                    cfg = small_config(model_type, tied=tied)
                    model = CausalLM(cfg, attention="auto")
                    init_weights(model, 3, std=0.3)
                    model.to(dtype)
                    dense = CausalLM(cfg, attention="eager")
                    dense.load_state_dict(model.state_dict())
                    dense.to(dtype)
                    long = loss_and_grads(model, self.rows, self.train, long_rows=True)
                    stored = loss_and_grads(model, self.rows, self.train, long_rows=False)
                    padded = loss_and_grads(dense, self.rows, self.train, long_rows=False)
                    self.compare(long, stored, tol, what + " vs stored")
                    self.compare(long, padded, tol, what + " vs dense mask")

    def test_recomputed_attention_passes_gradcheck(self) -> None:
        gen = torch.Generator().manual_seed(2)
        heads, ancestors, length, d = 2, 5, 9, 4
        q = torch.randn(heads, length, d, generator=gen, dtype=torch.float64, requires_grad=True)
        k = torch.randn(heads, ancestors + length, d, generator=gen, dtype=torch.float64, requires_grad=True)
        v = torch.randn(heads, ancestors + length, d, generator=gen, dtype=torch.float64, requires_grad=True)
        qpos = torch.arange(length)
        self.assertTrue(torch.autograd.gradcheck(lambda a, b, c: segments._SegmentAttention.apply(a, b, c, ancestors, 0.5, qpos), (q, k, v)))

    def test_recomputed_logprob_and_entropy_pass_gradcheck(self) -> None:
        gen = torch.Generator().manual_seed(3)
        hidden = torch.randn(6, 5, generator=gen, dtype=torch.float64, requires_grad=True)
        weight = torch.randn(11, 5, generator=gen, dtype=torch.float64, requires_grad=True)
        targets = torch.tensor([0, 3, 10, 3, 7, 1])
        for temperature in (1.0, 0.7):
            fn = lambda h, w: packed._ChunkScores.apply(h, w, targets, temperature, torch.float64)  # noqa: E731
            self.assertTrue(torch.autograd.gradcheck(fn, (hidden, weight)))
            # Only one output used: the other's gradient arrives as None (backward's shortcut without the entropy term).
            for used in (0, 1):
                one = lambda h, w: packed._ChunkScores.apply(h, w, targets, temperature, torch.float64)[used]  # noqa: E731
                self.assertTrue(torch.autograd.gradcheck(one, (hidden, weight)), f"output {used} alone")

    def test_recomputed_scores_equal_autograd_log_softmax_in_float32(self) -> None:
        # The one-exp forward (H = log s − Σ e z′ / s) against log_softmax and autograd, at a vocabulary large enough
        # for rounding to show, with an id masked out (its logit is the dtype's lowest value).
        gen = torch.Generator().manual_seed(5)
        hidden = torch.randn(7, 16, generator=gen)
        weight = torch.randn(3000, 16, generator=gen) * 0.5
        targets = torch.tensor([0, 5, 2999, 17, 5, 100, 2000])
        textless = torch.tensor([11])
        # Small weights, as real loss weights are: |g| ≥ 1 would overflow (lowest logit) · g before the zero p.
        coef = torch.randn(7, generator=gen) * 0.01
        for temperature in (1.0, 0.7):
            grads = []
            outs = []
            for fused in (True, False):
                h, w = hidden.clone().requires_grad_(True), weight.clone().requires_grad_(True)
                if fused:
                    lp, ent = packed._ChunkScores.apply(h, w, targets, temperature, torch.float32, textless)
                else:
                    logp = torch.log_softmax(packed.mask_textless(F.linear(h, w) / temperature, textless), dim=-1)
                    lp, ent = logp.gather(1, targets[:, None]).squeeze(1), -(logp.exp() * logp).sum(-1)
                (coef * lp + coef.flip(0) * ent).sum().backward()
                outs.append((lp.detach(), ent.detach()))
                grads.append((h.grad, w.grad))
            for a, b in zip(outs[0] + grads[0], outs[1] + grads[1]):
                self.assertTrue(torch.allclose(a, b, rtol=1e-5, atol=1e-6), float((a - b).abs().max()))

    def test_forward_backward_op_gives_the_same_step_on_both_paths_and_reports_peak_memory(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 4, std=0.3)
        state = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
        state.loaded = LoadedModel(model, model.config, None)
        total = sum(r.length for r in self.rows)
        gen = torch.Generator().manual_seed(9)
        per_token = {
            "old_logprobs": (-torch.rand(total, generator=gen)).tolist(),
            "advantages": torch.randn(total, generator=gen).tolist(),
            "loss_weights": torch.rand(total, generator=gen).tolist(),
        }
        frames = batch_frames(self.rows, per_token, torch.cat(self.train).int().tolist())
        results = []
        for long_row_tokens, chunked in ((0, False), (1, True)):
            state.settings.long_row_tokens, state.settings.chunked_logits = long_row_tokens, chunked
            call(state, "zero_grad", {})
            r, out = call(state, "forward_backward", {"row_lengths": [r.length for r in self.rows]}, frames)
            results.append((r, out["logprobs"], {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
        (r0, lp0, g0), (r1, lp1, g1) = results
        self.assertEqual((r0["long_rows"], r1["long_rows"]), (False, True))
        self.assertAlmostEqual(r0["loss"], r1["loss"], places=5)
        self.assertAlmostEqual(r0["entropy_mean"], r1["entropy_mean"], places=5)
        self.assertLess(float((lp0 - lp1).abs().max()), 1e-5)
        for name in g0:
            scale = float(g0[name].abs().max()) + 1e-8
            self.assertLess(float((g0[name] - g1[name]).abs().max()) / scale, 1e-4, name)
        for r in (r0, r1):
            self.assertGreater(r["peak_rss_mb"], 10.0)
            self.assertNotIn("cuda_peak_mb", r)

    def test_logprobs_op_scores_only_trainable_tokens_when_given_them(self) -> None:
        model = CausalLM(small_config("qwen2", tied=False))
        init_weights(model, 6, std=0.3)
        state = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
        state.loaded = LoadedModel(model, model.config, None)
        frames = batch_frames(self.rows, {}, torch.cat(self.train).int().tolist())
        args = {"row_lengths": [r.length for r in self.rows]}
        _, only = call(state, "logprobs", args, frames)
        _, full = call(state, "logprobs", args, {k: v for k, v in frames.items() if k != "trainable"})
        mask = torch.cat(self.train)
        for name in ("logprobs", "entropy"):
            # float32 values of a few nats computed over matmuls of other shapes: a few ulps (1.2e-6 seen on one CPU).
            self.assertLess(float((only[name][mask] - full[name][mask]).abs().max()), 1e-5, name)
            self.assertTrue(bool((only[name][~mask] == 0).all()), name)
        self.assertGreater(float(full["logprobs"][~mask].abs().sum()), 0.0)

    def test_threshold_applies_to_the_longest_tree_path_not_the_row_length(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 5)
        state = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1, long_row_tokens=40))
        state.loaded = LoadedModel(model, model.config, None)
        # The tree row has 56 tokens but its longest path has 31.
        tree = self.rows[0]
        self.assertGreater(tree.length, 40)
        self.assertEqual(int(tree.positions.max()) + 1, 31)
        frames = batch_frames([tree], {"old_logprobs": [0.0] * tree.length, "advantages": [1.0] * tree.length, "loss_weights": [1.0] * tree.length}, self.train[0].int().tolist())
        r, _ = call(state, "forward_backward", {"row_lengths": [tree.length]}, frames)
        self.assertFalse(r["long_rows"])
        state.settings.long_row_tokens = 31
        r, _ = call(state, "forward_backward", {"row_lengths": [tree.length]}, frames)
        self.assertTrue(r["long_rows"])


if __name__ == "__main__":
    unittest.main()
