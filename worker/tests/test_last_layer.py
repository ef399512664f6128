"""Last-layer pruning: when only some tokens are scored, the last layer runs only at the positions their logits read
(CausalLM.hidden_states_planned `keep`). The logprobs and gradients must be exactly those of the full last layer, on
tree rows with branches and second roots, both attention paths (stored and recomputed probabilities), with and without
gradient checkpointing, for qwen2 and qwen3, one layer and two; and the op-level switch must change nothing but the work."""
from __future__ import annotations

import random
import unittest
from typing import Dict, List, Optional, Tuple

import torch

from harnessrl_worker import packed, segments
from harnessrl_worker.config import ModelConfig
from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.modeldir import LoadedModel
from harnessrl_worker.packed import forward_micro_batches, packed_scores, scored_parents
from harnessrl_worker.state import WorkerSettings, WorkerState

from .helpers import small_config
from .test_long_rows import loss_and_grads, trainable_masks, tree_rows
from .test_lora import attach_live_adapters
from .test_train import batch_frames, call

Grads = Dict[str, torch.Tensor]


def one_layer(model_type: str) -> ModelConfig:
    cfg = small_config(model_type)
    cfg.num_hidden_layers = 1
    return cfg.validate()


class LastLayerPruningTest(unittest.TestCase):
    def setUp(self) -> None:
        rng = random.Random(23)
        self.rows = tree_rows(rng)
        self.train = trainable_masks(self.rows, rng)
        # Small query blocks so kept queries of one segment span several blocks, some with gaps between them.
        self.saved = segments.QUERY_BLOCK
        segments.QUERY_BLOCK = 3

    def tearDown(self) -> None:
        segments.QUERY_BLOCK = self.saved

    def assert_same(self, a: Tuple[List[torch.Tensor], Grads], b: Tuple[List[torch.Tensor], Grads], tol: float, what: str) -> None:
        for x, y in zip(a[0], b[0]):
            self.assertEqual(x.shape, y.shape)
            self.assertLess(float((x - y).abs().max()) if x.numel() else 0.0, tol, f"{what}: logprobs")
        self.assertEqual(set(a[1]), set(b[1]), what)
        for name in a[1]:
            scale = float(b[1][name].abs().max()) + 1e-12
            self.assertLess(float((a[1][name] - b[1][name]).abs().max()) / scale, tol, f"{what}: {name}")

    def test_pruned_last_layer_gives_the_full_layers_logprobs_and_gradients(self) -> None:
        for model_type in ("qwen3", "qwen2"):
            for cfg in (small_config(model_type), one_layer(model_type)):
                for recompute in (False, True):
                    for checkpointing in (False, True):
                        what = f"{model_type} layers={cfg.num_hidden_layers} recompute={recompute} checkpointing={checkpointing}"
                        model = CausalLM(cfg, attention="auto")
                        init_weights(model, 4, std=0.3)
                        model.to(torch.float64)
                        model.gradient_checkpointing = checkpointing
                        pruned = loss_and_grads(model, self.rows, self.train, recompute, prune=True)
                        full = loss_and_grads(model, self.rows, self.train, recompute, prune=False)
                        self.assert_same(pruned, full, 1e-10, what)

    def test_lora_adapters_on_the_last_layer_get_the_same_gradients(self) -> None:
        model = CausalLM(small_config("qwen3", tied=False), attention="auto")
        init_weights(model, 4, std=0.3)
        attach_live_adapters(model)
        model.to(torch.float64)
        for recompute in (False, True):
            pruned = loss_and_grads(model, self.rows, self.train, recompute, prune=True)
            full = loss_and_grads(model, self.rows, self.train, recompute, prune=False)
            self.assertTrue(all(".lora_" in n for n in full[1]) and any(".layers.1." in n for n in full[1]))
            self.assert_same(pruned, full, 1e-10, f"lora recompute={recompute}")

    def test_float32_agrees_within_rounding(self) -> None:
        model = CausalLM(small_config("qwen3"), attention="auto")
        init_weights(model, 4, std=0.3)
        self.assert_same(loss_and_grads(model, self.rows, self.train, True, True), loss_and_grads(model, self.rows, self.train, True, False), 1e-4, "float32")

    def test_the_last_layer_forms_queries_only_where_scored_tokens_read(self) -> None:
        model = CausalLM(small_config("qwen3"), attention="auto")
        init_weights(model, 4, std=0.3)
        seen: List[int] = []
        model.model.layers[-1].self_attn.q_proj.register_forward_hook(lambda _m, inp, _o: seen.append(int(inp[0].shape[1])))
        with torch.no_grad():
            list(forward_micro_batches(model, self.rows, token_budget=10_000, needed=self.train))
        expected = int(scored_parents(self.rows, self.train).numel())
        total = sum(r.length for r in self.rows)
        self.assertEqual(seen, [expected])
        self.assertLess(expected, total)

    def test_hidden_states_outside_the_kept_positions_are_zero_and_the_kept_ones_exact(self) -> None:
        model = CausalLM(small_config("qwen3"), attention="auto")
        init_weights(model, 4, std=0.3)
        model.to(torch.float64)
        with torch.no_grad():
            (_, pruned), = list(forward_micro_batches(model, self.rows[:1], token_budget=10_000, needed=self.train[:1]))
            (_, full), = list(forward_micro_batches(model, self.rows[:1], token_budget=10_000))
        keep = scored_parents(self.rows[:1], self.train[:1])
        outside = torch.ones(self.rows[0].length, dtype=torch.bool)
        outside[keep] = False
        self.assertTrue(bool((pruned[0][outside] == 0).all()))
        self.assertLess(float((pruned[0][keep] - full[0][keep]).abs().max()), 1e-12)

    def test_no_scored_token_runs_no_last_layer(self) -> None:
        model = CausalLM(small_config("qwen3"), attention="auto")
        init_weights(model, 4, std=0.3)
        none = [torch.zeros(r.length, dtype=torch.bool) for r in self.rows]
        with torch.no_grad():
            scores = packed_scores(model, self.rows, needed=none)
        self.assertTrue(all(bool((lp == 0).all()) for lp in scores.logprobs))

    def test_kept_query_attention_passes_gradcheck(self) -> None:
        gen = torch.Generator().manual_seed(6)
        heads, ancestors, length, d = 2, 5, 11, 4
        qpos = torch.tensor([0, 3, 4, 9, 10])
        q = torch.randn(heads, qpos.numel(), d, generator=gen, dtype=torch.float64, requires_grad=True)
        k = torch.randn(heads, ancestors + length, d, generator=gen, dtype=torch.float64, requires_grad=True)
        v = torch.randn(heads, ancestors + length, d, generator=gen, dtype=torch.float64, requires_grad=True)
        self.assertTrue(torch.autograd.gradcheck(lambda a, b, c: segments._SegmentAttention.apply(a, b, c, ancestors, 0.5, qpos), (q, k, v)))


class OpSwitchTest(unittest.TestCase):
    """`forward_backward` and `logprobs` answer the same with `prune_last_layer` on (default) and off."""

    def state(self, prune: bool, long_row_tokens: int) -> WorkerState:
        cfg = small_config("qwen3")
        model = CausalLM(cfg)
        init_weights(model, 8, std=0.3)
        st = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1, long_row_tokens=long_row_tokens, prune_last_layer=prune))
        st.loaded = LoadedModel(model, cfg, None)
        return st

    def test_forward_backward_and_logprobs_match_with_the_switch_off(self) -> None:
        rng = random.Random(4)
        rows = tree_rows(rng)
        train = trainable_masks(rows, rng)
        n = sum(r.length for r in rows)
        trainable = [int(x) for m in train for x in m.tolist()]
        per_token = {"loss_weights": [1.0 / n] * n, "old_logprobs": [-4.0] * n, "advantages": [rng.uniform(-1, 1) for _ in range(n)]}
        frames = batch_frames(rows, per_token, trainable)
        for long_at in (0, 8):
            answers: List[Tuple[Dict[str, object], torch.Tensor, torch.Tensor, Optional[torch.Tensor]]] = []
            for prune in (True, False):
                st = self.state(prune, long_at)
                result, out = call(st, "forward_backward", {"row_lengths": [r.length for r in rows]}, frames)
                grad = torch.cat([p.grad.flatten() for p in st.require_model().model.parameters() if p.grad is not None])
                _, scored = call(st, "logprobs", {"row_lengths": [r.length for r in rows]}, {k: frames[k] for k in ("tokens", "parent", "positions", "trainable")})
                answers.append((result, out["logprobs"], grad, scored["logprobs"]))
            (r1, lp1, g1, s1), (r2, lp2, g2, s2) = answers
            self.assertAlmostEqual(float(r1["loss"]), float(r2["loss"]), places=5)  # type: ignore[arg-type]
            self.assertLess(float((lp1 - lp2).abs().max()), 1e-5)
            self.assertLess(float((g1 - g2).norm() / g2.norm()), 1e-5)
            self.assertLess(float((s1 - s2).abs().max()), 1e-5)
            self.assertGreater(float(lp1.abs().sum()), 0.0)


if __name__ == "__main__":
    unittest.main()
