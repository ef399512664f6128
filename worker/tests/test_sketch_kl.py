"""Gradient sketches (fixed projection, linear, inner-product preserving) and the KL-to-reference penalty."""
from __future__ import annotations

import unittest
from typing import Dict

import torch

from harnessrl_worker.losses import PGLossConfig, pg_token_loss
from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.ops.sketch import count_sketch
from harnessrl_worker.server import handle

from .helpers import small_config
from .test_packed import flat_row
from .test_train import batch_frames, call, make_state


class SketchTest(unittest.TestCase):
    def test_sketch_is_a_fixed_linear_projection(self) -> None:
        model = CausalLM(small_config())
        init_weights(model, 1, std=0.3)
        state = make_state(model)
        body, _ = handle(state, {"id": 1, "op": "grad_sketch", "args": {}}, {})
        self.assertEqual(body["error"]["code"], "bad_request")  # nothing accumulated yet
        row = flat_row([3, 9, 27, 14, 5, 8, 60, 2])
        sketches = []
        for adv in (1.0, -1.0, 1.0):
            frames = batch_frames([row], {"old_logprobs": [0.0] * 8, "advantages": [adv] * 8, "loss_weights": [0.125] * 8}, [0] + [1] * 7)
            call(state, "forward_backward", {"row_lengths": [8], "loss": {"is_mode": "none"}}, frames)
            result, out = call(state, "grad_sketch", {"dim": 512, "seed": 3})
            self.assertGreater(result["grad_norm"], 0)
            sketches.append(out["sketch"])
            call(state, "zero_grad", {})
        self.assertEqual(sketches[0].shape, (512,))
        self.assertTrue(torch.equal(sketches[0], sketches[2]))  # same gradient, same projection
        self.assertTrue(torch.allclose(sketches[1], -sketches[0], atol=1e-6))  # linear

    def test_sketch_preserves_cosine_approximately(self) -> None:
        gen = torch.Generator().manual_seed(0)
        a = {"w": torch.randn(200, 100, generator=gen), "b": torch.randn(300, generator=gen)}
        noise = {k: torch.randn(v.shape, generator=gen) for k, v in a.items()}
        b = {k: a[k] + 1.0 * noise[k] for k in a}  # true cosine ≈ 0.71

        def flat(d: Dict[str, torch.Tensor]) -> torch.Tensor:
            return torch.cat([d[k].reshape(-1) for k in sorted(d)])

        true_cos = float(torch.nn.functional.cosine_similarity(flat(a), flat(b), dim=0))
        sa, sb = count_sketch(a, 4096, 0), count_sketch(b, 4096, 0)
        self.assertAlmostEqual(float(torch.nn.functional.cosine_similarity(sa, sb, dim=0)), true_cos, delta=0.05)
        self.assertFalse(torch.equal(count_sketch(a, 4096, 1), sa))  # another seed is another projection


class ReferenceKLTest(unittest.TestCase):
    def test_kl_penalty_is_k3_and_pulls_towards_the_reference(self) -> None:
        logp = torch.tensor([-1.0, -2.0], requires_grad=True)
        ref = torch.tensor([-1.0, -1.5])
        zeros = torch.zeros(2)
        out = pg_token_loss(logp, zeros, None, logp.detach(), zeros, torch.ones(2), torch.ones(2, dtype=torch.uint8), PGLossConfig(kl_coef=0.5), ref)
        d = torch.tensor([0.0, 0.5])
        expected = 0.5 * (torch.exp(d) - d - 1.0)
        self.assertTrue(torch.allclose(out.loss, expected, atol=1e-6))
        out.loss.sum().backward()
        assert logp.grad is not None
        self.assertEqual(float(logp.grad[0]), 0.0)  # already at the reference
        self.assertLess(float(logp.grad[1]), 0.0)  # descending the loss raises logp towards ref

    def test_kl_coef_without_reference_logprobs_is_rejected(self) -> None:
        state = make_state(CausalLM(small_config()))
        frames = batch_frames([flat_row([1, 2, 3])], {"old_logprobs": [0, -1, -1], "advantages": [0, 1, 1], "loss_weights": [1, 1, 1]}, [0, 1, 1])
        body, _ = handle(state, {"id": 1, "op": "forward_backward", "args": {"row_lengths": [3], "loss": {"kl_coef": 0.1}}}, frames)
        self.assertEqual(body["error"]["code"], "bad_request")
        frames["ref_logprobs"] = torch.tensor([0.0, -1.0, -1.0])
        result, _ = call(state, "forward_backward", {"row_lengths": [3], "loss": {"kl_coef": 0.1}}, frames)
        self.assertGreaterEqual(result["ref_kl_mean"], 0.0)


if __name__ == "__main__":
    unittest.main()
