"""The PPO critic: values aligned with tokens (tree == flat), fitting returns, value clipping, save/load."""
from __future__ import annotations

import tempfile
import unittest
from typing import Dict, List

import torch

from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.packed import PackedRow
from harnessrl_worker.server import handle

from .helpers import small_config
from .test_packed import flat_row, pack_paths
from .test_train import call, make_state


def row_frames(rows: List[PackedRow], extra: Dict[str, torch.Tensor] | None = None) -> Dict[str, torch.Tensor]:
    frames = {
        "tokens": torch.cat([r.tokens for r in rows]).to(torch.int32),
        "parent": torch.cat([r.parent for r in rows]).to(torch.int32),
        "positions": torch.cat([r.positions for r in rows]).to(torch.int32),
    }
    frames.update(extra or {})
    return frames


class CriticTest(unittest.TestCase):
    def setUp(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 2, std=0.3)
        self.state = make_state(model)
        self.paths = [[1, 5, 9, 12, 40, 41, 42], [1, 5, 9, 12, 50, 51], [1, 5, 7]]

    def test_requires_init_then_starts_at_zero(self) -> None:
        body, _ = handle(self.state, {"id": 1, "op": "critic_values", "args": {"row_lengths": [3]}}, row_frames([flat_row([1, 2, 3])]))
        self.assertEqual(body["error"]["code"], "no_critic")
        info, _ = call(self.state, "critic_init", {})
        self.assertGreater(info["parameters"], 0)
        _, out = call(self.state, "critic_values", {"row_lengths": [3]}, row_frames([flat_row([1, 2, 3])]))
        self.assertTrue(torch.equal(out["values"], torch.zeros(3)))

    def test_fits_returns_and_tree_values_equal_flat_values(self) -> None:
        call(self.state, "critic_init", {"from_policy": False, "seed": 4})
        rows = [flat_row(p) for p in self.paths]
        n = sum(r.length for r in rows)
        # Returns that depend on the state only (shared prefixes must get one value): 0.2 × depth.
        returns = torch.cat([r.positions.float() * 0.2 for r in rows])
        trainable = torch.cat([torch.tensor([0] + [1] * (r.length - 1), dtype=torch.uint8) for r in rows])
        frames = row_frames(rows, {"trainable": trainable, "returns": returns, "loss_weights": torch.full((n,), 1.0 / n)})
        first, _ = call(self.state, "critic_forward_backward", {"row_lengths": [r.length for r in rows]}, frames)
        call(self.state, "critic_optim_step", {"lr": 0.01})
        for _ in range(30):
            last, _ = call(self.state, "critic_forward_backward", {"row_lengths": [r.length for r in rows]}, frames)
            call(self.state, "critic_optim_step", {"lr": 0.01})
        self.assertLess(last["value_loss"], first["value_loss"] * 0.2)
        # Values of a tree-packed row equal those of each path alone.
        tree, node_paths = pack_paths(self.paths)
        _, t_out = call(self.state, "critic_values", {"row_lengths": [tree.length]}, row_frames([tree]))
        _, f_out = call(self.state, "critic_values", {"row_lengths": [r.length for r in rows]}, row_frames(rows))
        start = 0
        for r, nodes in zip(rows, node_paths):
            self.assertTrue(torch.allclose(t_out["values"][nodes], f_out["values"][start : start + r.length], atol=1e-5))
            start += r.length
        self.assertGreater(float(f_out["values"][6] - f_out["values"][1]), 0.5)  # deeper states learned larger values
        # Save and reload: same values.
        with tempfile.TemporaryDirectory() as tmp:
            call(self.state, "critic_save", {"dir": tmp})
            call(self.state, "critic_load", {"dir": tmp})
            _, again = call(self.state, "critic_values", {"row_lengths": [r.length for r in rows]}, row_frames(rows))
            self.assertTrue(torch.allclose(again["values"], f_out["values"], atol=1e-6))
            body, _ = handle(self.state, {"id": 1, "op": "critic_load", "args": {"dir": tmp + "/nope"}}, {})
            self.assertFalse(body["ok"])

    def test_value_clipping_takes_the_pessimistic_error(self) -> None:
        call(self.state, "critic_init", {})
        row = flat_row([1, 2, 3])
        # V = 0 everywhere (zero head); old values 0.5 with clip 0.1 → clipped V = 0.4; return 1:
        # unclipped err 1, clipped err 0.36 → max = 1 (no clip effect). With return -1: 1 vs 1.96 → clipped wins.
        base = {"trainable": torch.tensor([0, 1, 1], dtype=torch.uint8), "loss_weights": torch.ones(3), "old_values": torch.full((3,), 0.5)}
        pos, _ = call(self.state, "critic_forward_backward", {"row_lengths": [3], "value_clip": 0.1}, row_frames([row], dict(base, returns=torch.ones(3))))
        neg, _ = call(self.state, "critic_forward_backward", {"row_lengths": [3], "value_clip": 0.1}, row_frames([row], dict(base, returns=-torch.ones(3))))
        self.assertAlmostEqual(pos["value_loss"], 2 * 0.5 * 1.0, places=5)
        self.assertEqual(pos["clip_fraction"], 0.0)
        self.assertAlmostEqual(neg["value_loss"], 2 * 0.5 * 1.96, places=5)
        self.assertEqual(neg["clip_fraction"], 1.0)
        body, _ = handle(self.state, {"id": 1, "op": "critic_forward_backward", "args": {"row_lengths": [3], "value_clip": 0.1}}, row_frames([row], {"trainable": base["trainable"], "loss_weights": torch.ones(3), "returns": torch.ones(3)}))
        self.assertEqual(body["error"]["code"], "bad_request")


if __name__ == "__main__":
    unittest.main()
