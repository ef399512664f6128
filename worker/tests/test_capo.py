"""CAPO: probing picks the most active units per partition; gradients are routed by partition; the update leaves every
entry outside both partitions untouched (even with weight decay and momentum)."""
from __future__ import annotations

import unittest
from typing import Dict, List

import torch

from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.server import handle

from .helpers import small_config
from .test_packed import flat_row
from .test_train import batch_frames, call, make_state



PROBE_FRAMES = ("tokens", "parent", "positions", "action_mask", "args_mask")


def probe_frames(frames: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """The training batch's frames that capo_probe takes (the worker refuses frames an op does not declare)."""
    return {k: v for k, v in frames.items() if k in PROBE_FRAMES}

class CapoTest(unittest.TestCase):
    def setUp(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 3, std=0.3)
        self.model = model
        self.state = make_state(model)
        gen = torch.Generator().manual_seed(5)
        self.rows = [flat_row(torch.randint(0, 61, (14,), generator=gen).tolist()) for _ in range(2)]
        n = 28
        # Per row: tokens 4-6 are the action (tool name), 7-12 the arguments, the rest context.
        action = ([0] * 4 + [1] * 3 + [0] * 7) * 2
        args = ([0] * 7 + [1] * 6 + [0] * 1) * 2
        self.frames = batch_frames(self.rows, {"old_logprobs": [-2.0] * n, "advantages": torch.linspace(-1, 1, n).tolist(), "loss_weights": [1.0 / n] * n}, [0] * 4 + [1] * 9 + [0] + [0] * 4 + [1] * 9 + [0])
        self.frames["action_mask"] = torch.tensor(action, dtype=torch.uint8)
        self.frames["args_mask"] = torch.tensor(args, dtype=torch.uint8)
        self.lengths = [14, 14]

    def probe(self) -> Dict[str, float]:
        return call(self.state, "capo_probe", {"row_lengths": self.lengths, "top_fraction": 0.25}, probe_frames(self.frames))[0]

    def test_probe_picks_the_units_most_active_where_action_tokens_are_produced(self) -> None:
        stats = self.probe()
        self.assertEqual(stats["units_per_layer"], 10.0)  # ceil(0.25 × 40)
        masks = self.state.extensions["capo"]
        # Recompute the mean positive up-projection activation at the producing positions (parent of each action token).
        acts: List[torch.Tensor] = []
        hooks = [layer.mlp.up_proj.register_forward_hook(lambda _m, _i, out: acts.append(out.detach())) for layer in self.model.model.layers]
        try:
            with torch.no_grad():
                for row in self.rows:
                    n = row.length
                    self.model.hidden_states(row.tokens[None], row.positions[None], torch.ones(1, n, n, dtype=torch.bool).tril())
        finally:
            for h in hooks:
                h.remove()
        layers = len(self.model.model.layers)
        producing = [3, 4, 5]  # parents of action tokens 4, 5, 6
        for layer in range(layers):
            per_row = [acts[r * layers + layer][0, producing].clamp(min=0) for r in range(2)]
            mean = torch.cat(per_row).mean(0)
            chosen = masks.action_units[layer]
            self.assertEqual(int(chosen.sum()), 10)
            self.assertGreaterEqual(float(mean[chosen].min()), float(mean[~chosen].max()) - 1e-9, layer)

    def test_gradients_are_routed_to_their_partitions(self) -> None:
        self.probe()
        body, _ = handle(make_state(self.model), {"id": 1, "op": "forward_backward", "args": {"row_lengths": self.lengths, "capo": True}}, self.frames)
        self.assertEqual(body["error"]["code"], "no_capo_masks")
        # Reference gradients of L_a and L_g: the ordinary loss with only action (or only args) tokens trainable.
        grads: Dict[str, Dict[str, torch.Tensor]] = {}
        for key in ("action_mask", "args_mask"):
            only = dict(self.frames, trainable=self.frames[key].clone())
            call(self.state, "forward_backward", {"row_lengths": self.lengths}, only)
            grads[key] = {n: p.grad.clone() for n, p in self.model.named_parameters() if p.grad is not None}
            call(self.state, "zero_grad", {})
        result, _ = call(self.state, "forward_backward", {"row_lengths": self.lengths, "capo": True}, self.frames)
        self.assertTrue(-1.0 <= result["capo_grad_cosine"] <= 1.0)
        masks = self.state.extensions["capo"]
        m_a, m_g = masks.param_masks(self.model, "action"), masks.param_masks(self.model, "args")
        for name, p in self.model.named_parameters():
            assert p.grad is not None
            if name in m_a:
                expected = grads["action_mask"][name] * m_a[name] + grads["args_mask"][name] * m_g[name]
                self.assertTrue(torch.allclose(p.grad, expected, atol=1e-6), name)
            else:
                self.assertEqual(float(p.grad.abs().max()), 0.0, name)

    def test_update_leaves_everything_outside_both_partitions_in_place(self) -> None:
        self.probe()
        before = {n: p.detach().clone() for n, p in self.model.named_parameters()}
        for _ in range(2):  # the second step has momentum everywhere the first one touched
            call(self.state, "forward_backward", {"row_lengths": self.lengths, "capo": True}, self.frames)
            step, _ = call(self.state, "optim_step", {"lr": 0.01, "weight_decay": 0.1, "capo": True})
            self.assertGreater(step["capo_held_entries"], 0)
        union = self.state.extensions["capo"].param_masks(self.model, "union")
        moved_inside = 0
        for name, p in self.model.named_parameters():
            mask = union.get(name)
            if mask is None:
                self.assertTrue(torch.equal(p, before[name]), name)
            else:
                self.assertTrue(torch.equal(p[~mask], before[name][~mask]), name)
                moved_inside += int((p[mask] != before[name][mask]).sum())
        self.assertGreater(moved_inside, 0)


if __name__ == "__main__":
    unittest.main()
