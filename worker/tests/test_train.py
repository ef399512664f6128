"""Training ops: the PG/TIS loss against hand-computed values, gradients against finite differences, tree-packed vs
flat gradients, and AdamW steps that move logprobs the way the advantages say."""
from __future__ import annotations

import random
import unittest
from typing import Any, Dict, List, Tuple

import torch

from harnessrl_worker.losses import PGLossConfig, pg_token_loss
from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.modeldir import LoadedModel
from harnessrl_worker.packed import PackedRow, packed_scores
from harnessrl_worker.server import handle
from harnessrl_worker.state import WorkerSettings, WorkerState

from .helpers import small_config
from .test_packed import flat_row, pack_paths


def make_state(model: CausalLM) -> WorkerState:
    state = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
    state.loaded = LoadedModel(model, model.config, None)
    return state


def call(state: WorkerState, op: str, args: Dict[str, Any], frames: Dict[str, torch.Tensor] | None = None) -> Tuple[Dict[str, Any], Dict[str, torch.Tensor]]:
    body, out = handle(state, {"id": 1, "op": op, "args": args}, frames or {})
    assert body["ok"], body
    return body["result"], out


def batch_frames(rows: List[PackedRow], per_token: Dict[str, List[float]], trainable: List[int]) -> Dict[str, torch.Tensor]:
    frames = {
        "tokens": torch.cat([r.tokens for r in rows]).to(torch.int32),
        "parent": torch.cat([r.parent for r in rows]).to(torch.int32),
        "positions": torch.cat([r.positions for r in rows]).to(torch.int32),
        "trainable": torch.tensor(trainable, dtype=torch.uint8),
    }
    frames.update({k: torch.tensor(v, dtype=torch.float32) for k, v in per_token.items()})
    return frames


class LossTest(unittest.TestCase):
    def test_hand_computed_token_losses(self) -> None:
        # Tokens: (a) on-policy, A=+1, engine agrees: loss -1. (b) engine prob 3x lower than trainer's: TIS caps w at 2.
        # (c) ratio 1.5 > 1.2 with A=+1: clipped at 1.2. (d) not trainable.
        logp = torch.tensor([-1.0, -1.0, -1.0 + 0.4054651, -2.0], requires_grad=True)
        prox = torch.tensor([-1.0, -1.0, -1.0, -2.0])
        old = torch.tensor([-1.0, -1.0 - 1.0986123, -1.0, -2.0])
        adv = torch.tensor([1.0, 1.0, 1.0, 5.0])
        weights = torch.ones(4)
        trainable = torch.tensor([1, 1, 1, 0], dtype=torch.uint8)
        ent = torch.zeros(4)
        out = pg_token_loss(logp, ent, prox, old, adv, weights, trainable, PGLossConfig())
        expected = torch.tensor([-1.0, -2.0, -1.2, 0.0])
        self.assertTrue(torch.allclose(out.loss, expected, atol=1e-5), out.loss)
        self.assertEqual(out.stats["clipped"], 1.0)
        self.assertEqual(out.stats["is_limited"], 1.0)
        self.assertAlmostEqual(out.stats["mismatch_abs_max"], 1.0986123, places=5)
        out.loss.sum().backward()
        assert logp.grad is not None
        # d/dlogp of -w·r·A = -w·r·A at r = exp(logp - prox); clipped and untrainable tokens get none.
        self.assertTrue(torch.allclose(logp.grad, torch.tensor([-1.0, -2.0, 0.0, 0.0]), atol=1e-5), logp.grad)
        masked = pg_token_loss(logp.detach(), ent, prox, old, adv, weights, trainable, PGLossConfig(is_mode="mask"))
        self.assertTrue(torch.allclose(masked.loss, torch.tensor([-1.0, 0.0, -1.2, 0.0]), atol=1e-5))


class TrainOpsTest(unittest.TestCase):
    def setUp(self) -> None:
        rng = random.Random(9)
        prefix = [rng.randrange(61) for _ in range(6)]
        self.paths = [prefix + [rng.randrange(61) for _ in range(5)], prefix + [rng.randrange(61) for _ in range(4)]]

    def test_gradients_match_finite_differences(self) -> None:
        model = CausalLM(small_config("qwen2", tied=False))
        init_weights(model, 1, std=0.3)
        model = model.double()
        state = make_state(model)
        row, _ = pack_paths(self.paths)
        n = row.length
        gen = torch.Generator().manual_seed(0)
        with torch.no_grad():
            lp0 = packed_scores(model, [row]).logprobs[0].float()
        trainable = [0] * 3 + [1] * (n - 3)
        per_token = {
            # Ratios spread around 1, a few outside the clip range; engine logprobs off by up to ±1.
            "prox_logprobs": (lp0 + torch.randn(n, generator=gen) * 0.15).tolist(),
            "old_logprobs": (lp0 + torch.randn(n, generator=gen) * 0.5).tolist(),
            "advantages": torch.randn(n, generator=gen).tolist(),
            "loss_weights": (torch.rand(n, generator=gen) + 0.5).tolist(),
        }
        frames = batch_frames([row], per_token, trainable)
        args = {"row_lengths": [n], "temperature": 0.8, "loss": {"entropy_coef": 0.01}}
        call(state, "forward_backward", args, frames)
        analytic = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
        self.assertEqual(len(analytic), len(list(model.parameters())))
        call(state, "zero_grad", {})
        picks = [("model.embed_tokens.weight", (self.paths[0][3], 2)), ("model.layers.0.self_attn.q_proj.bias", (5,)), ("model.layers.1.self_attn.k_proj.weight", (3, 7)),
                 ("model.layers.0.mlp.down_proj.weight", (1, 11)), ("model.layers.1.input_layernorm.weight", (4,)), ("lm_head.weight", (self.paths[1][-1], 0)), ("model.norm.weight", (9,))]
        params = dict(model.named_parameters())
        h = 1e-6
        for name, idx in picks:
            p = params[name]
            with torch.no_grad():
                p[idx] += h
            plus = call(state, "forward_backward", args, frames)[0]["loss"]
            with torch.no_grad():
                p[idx] -= 2 * h
            minus = call(state, "forward_backward", args, frames)[0]["loss"]
            with torch.no_grad():
                p[idx] += h
            numeric = (plus - minus) / (2 * h)
            got = float(analytic[name][idx])
            self.assertAlmostEqual(got, numeric, delta=1e-6 + 1e-5 * abs(numeric), msg=f"{name}{idx}")
        self.assertGreater(max(float(g.abs().max()) for g in analytic.values()), 1e-3)

    def test_tree_packed_and_flat_batches_give_the_same_gradients(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 2, std=0.3)
        state = make_state(model)
        row, node_paths = pack_paths(self.paths)
        gen = torch.Generator().manual_seed(1)
        # Per flat token: advantage and weight. Shared prefix tokens appear in both paths; in the tree they appear once,
        # so a shared token's tree weight is the sum of its flat weights (with equal advantages, as GRPO assigns).
        flat_adv = [torch.full((len(p),), float(a)) for p, a in zip(self.paths, (0.7, -1.3))]
        flat_w = [torch.rand(len(p), generator=gen) for p in self.paths]
        flat_train = [[0] * 2 + [1] * (len(p) - 2) for p in self.paths]
        n = row.length
        tree_adv, tree_w, tree_train = torch.zeros(n), torch.zeros(n), [0] * n
        shared = set(node_paths[0]) & set(node_paths[1])
        for k, nodes in enumerate(node_paths):
            for j, node in enumerate(nodes):
                if not flat_train[k][j]:
                    continue
                tree_train[node] = 1
                if node in shared:
                    # weighted average advantage keeps Σ w·A identical
                    tree_adv[node] = (tree_adv[node] * tree_w[node] + flat_adv[k][j] * flat_w[k][j]) / (tree_w[node] + flat_w[k][j])
                else:
                    tree_adv[node] = flat_adv[k][j]
                tree_w[node] += flat_w[k][j]
        with torch.no_grad():
            tree_lp = packed_scores(model, [row]).logprobs[0]
        tree_frames = batch_frames([row], {"old_logprobs": tree_lp.tolist(), "advantages": tree_adv.tolist(), "loss_weights": tree_w.tolist()}, tree_train)
        flat_rows = [flat_row(p) for p in self.paths]
        flat_lp = torch.cat([tree_lp[nodes] for nodes in node_paths])
        flat_frames = batch_frames(flat_rows, {"old_logprobs": flat_lp.tolist(), "advantages": torch.cat(flat_adv).tolist(), "loss_weights": torch.cat(flat_w).tolist()}, sum(flat_train, []))
        r_tree, _ = call(state, "forward_backward", {"row_lengths": [n]}, tree_frames)
        g_tree = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
        call(state, "zero_grad", {})
        r_flat, out = call(state, "forward_backward", {"row_lengths": [len(p) for p in self.paths]}, flat_frames)
        g_flat = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
        self.assertAlmostEqual(r_tree["loss"], r_flat["loss"], places=5)
        self.assertEqual(set(g_tree), set(g_flat))
        for name in g_tree:
            scale = float(g_flat[name].abs().max()) + 1e-8
            self.assertLessEqual(float((g_tree[name] - g_flat[name]).abs().max()) / scale, 1e-4, name)
        # The returned logprobs are the current policy's at trainable tokens; the rest are not scored (0).
        trained = torch.tensor(sum(flat_train, []), dtype=torch.bool)
        self.assertTrue(torch.allclose(out["logprobs"][trained], flat_lp[trained], atol=1e-5))
        self.assertTrue(bool((out["logprobs"][~trained] == 0).all()))

    def test_optim_step_moves_logprobs_with_the_advantage_sign(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 3, std=0.3)
        state = make_state(model)
        rows = [flat_row(p) for p in self.paths]
        lengths = [r.length for r in rows]
        with torch.no_grad():
            before = [t.clone() for t in packed_scores(model, rows).logprobs]
        adv = [1.0] * lengths[0] + [-1.0] * lengths[1]
        frames = batch_frames(rows, {"old_logprobs": torch.cat(before).tolist(), "advantages": adv, "loss_weights": [1.0 / sum(lengths)] * sum(lengths)}, [0] + [1] * (lengths[0] - 1) + [0] + [1] * (lengths[1] - 1))
        self.assertTrue(call(state, "optim_step", {"lr": 0.01})[0]["skipped"])  # nothing accumulated yet
        r, _ = call(state, "forward_backward", {"row_lengths": lengths}, frames)
        self.assertEqual(r["trainable_tokens"], sum(lengths) - 2)
        self.assertAlmostEqual(r["mismatch_abs_max"], 0.0, places=5)
        step, _ = call(state, "optim_step", {"lr": 0.01, "max_grad_norm": 1.0})
        self.assertEqual((step["skipped"], step["step"]), (False, 1))
        self.assertGreater(step["grad_norm"], 0.0)
        self.assertTrue(all(p.grad is None for p in model.parameters()))
        with torch.no_grad():
            after = packed_scores(model, rows).logprobs
        self.assertGreater(float(after[0][1:].sum() - before[0][1:].sum()), 0.0)
        self.assertLess(float(after[1][1:].sum() - before[1][1:].sum()), 0.0)

    def test_sft_objective_is_weighted_nll_and_a_step_lowers_it(self) -> None:
        model = CausalLM(small_config("qwen2"))
        init_weights(model, 4, std=0.3)
        state = make_state(model)
        rows = [flat_row(p) for p in self.paths]
        lengths = [r.length for r in rows]
        n = sum(lengths)
        trainable = [0] + [1] * (lengths[0] - 1) + [0] + [1] * (lengths[1] - 1)
        frames = batch_frames(rows, {"loss_weights": [1.0 / n] * n}, trainable)  # no advantages / engine logprobs needed
        with torch.no_grad():
            lp = torch.cat(packed_scores(model, rows).logprobs)
        expected = float(-(lp * torch.tensor(trainable)).sum() / n)
        r, _ = call(state, "forward_backward", {"row_lengths": lengths, "objective": "sft"}, frames)
        self.assertEqual(r["objective"], "sft")
        self.assertAlmostEqual(r["loss"], expected, places=5)
        self.assertAlmostEqual(r["nll_mean"], expected * n / (n - 2), places=5)
        call(state, "optim_step", {"lr": 0.01})
        r2, _ = call(state, "forward_backward", {"row_lengths": lengths, "objective": "sft"}, frames)
        self.assertLess(r2["nll_mean"], r["nll_mean"])

    def test_long_row_paths_are_exact_query_blocks_and_gradient_checkpointing(self) -> None:
        import harnessrl_worker.model as model_module

        model = CausalLM(small_config("qwen3"))
        init_weights(model, 6, std=0.3)
        model = model.double()
        row, _ = pack_paths([self.paths[0] + list(range(20)), self.paths[1] + list(range(30, 45))])
        n = row.length
        frames = batch_frames([row], {"old_logprobs": [0.0] * n, "advantages": torch.linspace(-1, 1, n).tolist(), "loss_weights": [1.0] * n}, [0] + [1] * (n - 1))
        state = make_state(model)
        state.settings.grad_checkpoint_tokens = 0
        plain, out_plain = call(state, "forward_backward", {"row_lengths": [n]}, frames)
        self.assertFalse(plain["gradient_checkpointing"])
        g_plain = {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}
        call(state, "zero_grad", {})
        saved_block = model_module.EAGER_QUERY_BLOCK
        model_module.EAGER_QUERY_BLOCK = 7  # several query blocks per row
        try:
            state.settings.grad_checkpoint_tokens = 8
            chk, out_chk = call(state, "forward_backward", {"row_lengths": [n]}, frames)
        finally:
            model_module.EAGER_QUERY_BLOCK = saved_block
        self.assertTrue(chk["gradient_checkpointing"])
        self.assertFalse(model.gradient_checkpointing)  # only for the duration of the op
        self.assertTrue(torch.allclose(out_plain["logprobs"], out_chk["logprobs"], atol=1e-6))
        for k, g in g_plain.items():
            grad = dict(model.named_parameters())[k].grad
            assert grad is not None
            self.assertTrue(torch.allclose(grad, g, atol=1e-10, rtol=1e-8), k)

    def test_a_diverged_loss_is_an_error_and_leaves_no_gradient(self) -> None:
        model = CausalLM(small_config())
        init_weights(model, 1)
        with torch.no_grad():
            model.model.norm.weight.fill_(float("inf"))
        state = make_state(model)
        frames = batch_frames([flat_row([1, 2, 3])], {"old_logprobs": [0, -1, -1], "advantages": [0, 1, 1], "loss_weights": [1, 1, 1]}, [0, 1, 1])
        body, _ = handle(state, {"id": 1, "op": "forward_backward", "args": {"row_lengths": [3]}}, frames)
        self.assertEqual(body["error"]["code"], "non_finite_loss")
        self.assertTrue(all(p.grad is None for p in model.parameters()))

    def test_rejects_bad_training_batches(self) -> None:
        state = make_state(CausalLM(small_config()))
        row = flat_row([1, 2, 3])
        good = batch_frames([row], {"old_logprobs": [0, -1, -1], "advantages": [0, 1, 1], "loss_weights": [1, 1, 1]}, [0, 1, 1])
        for bad_frames, bad_args in (
            (dict(good, advantages=torch.tensor([0.0, float("nan"), 1.0])), {"row_lengths": [3]}),
            (dict(good, loss_weights=torch.ones(2)), {"row_lengths": [3]}),
            (good, {"row_lengths": [3], "loss": {"is_mode": "sometimes"}}),
            (good, {"row_lengths": [3], "loss": {"clip_lo": 0.1}}),
            (good, {"row_lengths": [3], "objective": "dpo"}),
        ):
            body, _ = handle(state, {"id": 1, "op": "forward_backward", "args": bad_args}, bad_frames)
            self.assertEqual(body["error"]["code"], "bad_request", body)


if __name__ == "__main__":
    unittest.main()
