"""`optim_step`'s `reset`: AdamW's moments reset exactly as documented, and the next updates are those a hand-computed
AdamW (first moment from zero, second moment and step count continued) or a fresh torch AdamW would make."""
from __future__ import annotations

import copy
import random
import unittest
from typing import Dict, List

import torch

from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.server import handle

from .helpers import small_config
from .test_packed import flat_row
from .test_train import batch_frames, call, make_state

LR, BETA1, BETA2, EPS = 0.01, 0.9, 0.999, 1e-8


def sft_frames(seed: int) -> tuple[Dict[str, torch.Tensor], List[int]]:
    rng = random.Random(seed)
    rows = [flat_row([rng.randrange(1, 60) for _ in range(n)]) for n in (9, 13)]
    lengths = [r.length for r in rows]
    n = sum(lengths)
    trainable = [0] + [1] * (lengths[0] - 1) + [0] + [1] * (lengths[1] - 1)
    return batch_frames(rows, {"loss_weights": [1.0 / n] * n}, trainable), lengths


class OptimizerResetTest(unittest.TestCase):
    def setUp(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 5, std=0.3)
        self.model = model
        self.state = make_state(model)
        # A "warm start": three SFT steps on one batch leave a first moment along its gradient.
        frames, lengths = sft_frames(1)
        for _ in range(3):
            call(self.state, "forward_backward", {"row_lengths": lengths, "objective": "sft"}, frames)
            call(self.state, "optim_step", {"lr": LR, "max_grad_norm": 0})
        # The next ("RL") gradient comes from another batch.
        self.frames, self.lengths = sft_frames(2)

    def accumulate(self) -> Dict[str, torch.Tensor]:
        call(self.state, "forward_backward", {"row_lengths": self.lengths, "objective": "sft"}, self.frames)
        return {n: p.grad.clone() for n, p in self.model.named_parameters()}

    def moments(self) -> Dict[str, Dict[str, torch.Tensor]]:
        opt = self.state.extensions["optim"].optimizer
        return {n: {k: v.clone() for k, v in opt.state[p].items()} for n, p in self.model.named_parameters()}

    def test_first_moment_reset_zeroes_exp_avg_and_continues_the_second_moment_and_step(self) -> None:
        before = self.moments()
        params = {n: p.detach().clone() for n, p in self.model.named_parameters()}
        grads = self.accumulate()
        r, _ = call(self.state, "optim_step", {"lr": LR, "max_grad_norm": 0, "reset": "first_moment"})
        self.assertEqual(r["reset_parameters"], len(params))
        after = self.moments()
        for n, p in self.model.named_parameters():
            g, old = grads[n], before[n]
            t = float(old["step"]) + 1
            self.assertEqual(float(after[n]["step"]), t)
            # m = (1 − β1) g: nothing of the warm start's direction is left.
            self.assertTrue(torch.allclose(after[n]["exp_avg"], (1 - BETA1) * g, rtol=1e-6, atol=1e-12), n)
            v = BETA2 * old["exp_avg_sq"] + (1 - BETA2) * g * g
            self.assertTrue(torch.allclose(after[n]["exp_avg_sq"], v, rtol=1e-6, atol=1e-14), n)
            # The update with the continued bias corrections.
            update = -LR * ((1 - BETA1) * g / (1 - BETA1**t)) / (v.sqrt() / (1 - BETA2**t) ** 0.5 + EPS)
            # (atol: p_new − p_old in float32 is exact only to about one ulp of the weight.)
            self.assertTrue(torch.allclose(p.detach() - params[n], update, rtol=1e-4, atol=1e-7), f"{n}: {float((p.detach() - params[n] - update).abs().max())}")
            # Without the reset the old first moment would have moved this parameter too: the reset made a difference.
            kept = -LR * ((BETA1 * old["exp_avg"] + (1 - BETA1) * g) / (1 - BETA1**t)) / (v.sqrt() / (1 - BETA2**t) ** 0.5 + EPS)
            if float(old["exp_avg"].abs().max()) > 1e-6:
                self.assertFalse(torch.allclose(update, kept, rtol=1e-3, atol=1e-9), n)

    def test_full_reset_makes_the_next_steps_those_of_a_fresh_adamw(self) -> None:
        fresh_model = copy.deepcopy(self.model)
        fresh = torch.optim.AdamW(fresh_model.parameters(), lr=LR, betas=(BETA1, BETA2), eps=EPS, weight_decay=0.0)
        for i in range(2):
            grads = self.accumulate()
            args = {"lr": LR, "max_grad_norm": 0, **({"reset": "all"} if i == 0 else {})}
            r, _ = call(self.state, "optim_step", args)
            self.assertEqual(r.get("reset_parameters"), len(grads) if i == 0 else None)
            for n, p in fresh_model.named_parameters():
                p.grad = grads[n]
            fresh.step()
            fresh.zero_grad(set_to_none=True)
            for (n, p), q in zip(self.model.named_parameters(), fresh_model.parameters()):
                self.assertTrue(torch.equal(p, q), f"step {i + 1} after the reset: {n}")
        self.assertEqual({float(s["step"]) for s in self.moments().values()}, {2.0})

    def test_reset_before_any_step_and_bad_values(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 6, std=0.3)
        state = make_state(model)
        call(state, "forward_backward", {"row_lengths": self.lengths, "objective": "sft"}, self.frames)
        r, _ = call(state, "optim_step", {"lr": LR, "reset": "first_moment"})
        self.assertEqual((r["reset_parameters"], r["skipped"], r["step"]), (0, False, 1))
        body, _ = handle(state, {"id": 2, "op": "optim_step", "args": {"lr": LR, "reset": "second_moment"}}, {})
        self.assertFalse(body["ok"])
        self.assertEqual(body["error"]["code"], "bad_request")


if __name__ == "__main__":
    unittest.main()
