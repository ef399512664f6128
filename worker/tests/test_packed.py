"""Packed prefix trees: every token's logprob equals running its root-to-leaf path alone; entropy; temperature; batching."""
from __future__ import annotations

import random
import unittest
from typing import Dict, List, Tuple

import torch
import torch.nn.functional as F

from harnessrl_worker.errors import WorkerError
from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.packed import PackedRow, ancestor_mask, micro_batches, packed_scores, validate_row
from harnessrl_worker.presets import PRESETS

from .helpers import small_config


def pack_paths(paths: List[List[int]]) -> Tuple[PackedRow, List[List[int]]]:
    """Packs token paths into one row as a trie (shared prefixes once); returns the row and each path's node indices."""
    tokens: List[int] = []
    parent: List[int] = []
    positions: List[int] = []
    children: Dict[Tuple[int, int], int] = {}
    node_paths: List[List[int]] = []
    for path in paths:
        node, nodes = -1, []
        for depth, tok in enumerate(path):
            key = (node, tok)
            if key not in children:
                children[key] = len(tokens)
                tokens.append(tok)
                parent.append(node)
                positions.append(depth)
            node = children[key]
            nodes.append(node)
        node_paths.append(nodes)
    row = PackedRow(torch.tensor(tokens), torch.tensor(parent), torch.tensor(positions))
    return row, node_paths


def flat_row(path: List[int]) -> PackedRow:
    n = len(path)
    return PackedRow(torch.tensor(path), torch.arange(-1, n - 1), torch.arange(n))


def tiny_model(seed: int = 0, preset: str = "tiny-1m") -> CausalLM:
    model = CausalLM(PRESETS[preset].config)
    init_weights(model, seed, std=0.1)  # larger than the default so distributions are far from uniform
    return model.eval()


class PackedTest(unittest.TestCase):
    def setUp(self) -> None:
        rng = random.Random(4)
        prefix = [rng.randrange(265) for _ in range(30)]
        mid = [rng.randrange(265) for _ in range(12)]
        self.paths = [
            prefix + mid + [rng.randrange(265) for _ in range(9)],
            prefix + mid + [rng.randrange(265) for _ in range(14)],
            prefix + [rng.randrange(265) for _ in range(20)],
            [rng.randrange(265) for _ in range(7)],  # a second tree in the same row
        ]

    def test_ancestor_mask(self) -> None:
        # 0 ← 1 ← 2, 0 ← 3, and a second root 4 ← 5
        m = ancestor_mask(torch.tensor([-1, 0, 1, 0, -1, 4]))
        expected = [[1, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0], [1, 0, 0, 1, 0, 0], [0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 1, 1]]
        self.assertEqual(m.int().tolist(), expected)
        self.assertTrue(torch.equal(ancestor_mask(torch.arange(-1, 4)), torch.ones(5, 5, dtype=torch.bool).tril()))

    def check_tree_equals_paths(self, model: CausalLM) -> None:
        row, node_paths = pack_paths(self.paths)
        self.assertLess(row.length, sum(len(p) for p in self.paths))  # the prefix really is shared
        with torch.no_grad():
            packed = packed_scores(model, [row])
            flat = packed_scores(model, [flat_row(p) for p in self.paths])
        for i, nodes in enumerate(node_paths):
            lp_tree = packed.logprobs[0][nodes]
            ent_tree = packed.entropy[0][nodes]
            self.assertLessEqual(float((lp_tree - flat.logprobs[i]).abs().max()), 1e-5, f"path {i}")
            self.assertLessEqual(float((ent_tree - flat.entropy[i]).abs().max()), 1e-5, f"path {i}")
            self.assertEqual(float(flat.logprobs[i][0]), 0.0)  # roots get none
            self.assertTrue(bool((flat.logprobs[i][1:] < 0).all()))

    def test_tree_packed_equals_each_path_alone_qwen3_preset(self) -> None:
        self.check_tree_equals_paths(tiny_model())

    def test_tree_packed_equals_each_path_alone_qwen2_with_bias_untied(self) -> None:
        model = CausalLM(small_config("qwen2", tied=False, vocab=265))
        init_weights(model, 3, std=0.2)
        self.check_tree_equals_paths(model.eval())

    def test_logprob_and_entropy_are_the_teacher_forced_distribution(self) -> None:
        model = tiny_model(1)
        path = self.paths[0]
        n = len(path)
        with torch.no_grad():
            logits = model.logits(model.hidden_states(torch.tensor([path]), torch.arange(n)[None], torch.ones(1, n, n, dtype=torch.bool).tril()))[0]
            for temperature in (1.0, 0.7):
                scores = packed_scores(model, [flat_row(path)], temperature=temperature)
                logp = F.log_softmax(logits / temperature, dim=-1)
                expected_lp = logp[torch.arange(n - 1), torch.tensor(path[1:])]
                expected_ent = -(logp.exp() * logp).sum(-1)[: n - 1]
                self.assertLessEqual(float((scores.logprobs[0][1:] - expected_lp).abs().max()), 1e-6)
                self.assertLessEqual(float((scores.entropy[0][1:] - expected_ent).abs().max()), 1e-5)
                self.assertTrue(bool((scores.entropy[0][1:] > 0).all()))
                self.assertTrue(bool((scores.entropy[0][1:] <= torch.log(torch.tensor(265.0)) + 1e-5).all()))
            t1 = packed_scores(model, [flat_row(path)], temperature=1.0).logprobs[0]
            t2 = packed_scores(model, [flat_row(path)], temperature=0.5).logprobs[0]
            self.assertFalse(torch.allclose(t1, t2))

    def test_batched_rows_with_padding_match_rows_one_at_a_time(self) -> None:
        model = tiny_model(2)
        rows = [pack_paths(self.paths[:2])[0], flat_row(self.paths[2]), flat_row(self.paths[3]), flat_row([])]
        with torch.no_grad():
            together = packed_scores(model, rows, token_budget=10_000)
            alone = [packed_scores(model, [r]) for r in rows]
            tight = packed_scores(model, rows, token_budget=1)  # forces one row per forward
        for i in range(len(rows)):
            self.assertEqual(together.logprobs[i].shape[0], rows[i].length)
            diff = (together.logprobs[i] - alone[i].logprobs[0]).abs()
            self.assertLessEqual(float(diff.max()) if diff.numel() else 0.0, 1e-5)
            self.assertTrue(torch.equal(tight.logprobs[i], alone[i].logprobs[0]))

    def test_micro_batches_respect_the_budget(self) -> None:
        groups = micro_batches([10, 50, 20, 50, 5], token_budget=100)
        self.assertEqual(sorted(i for g in groups for i in g), [0, 1, 2, 3, 4])
        lengths = [10, 50, 20, 50, 5]
        for g in groups:
            self.assertLessEqual(max(lengths[i] for i in g) * len(g), 100)
        self.assertEqual(micro_batches([500], token_budget=100), [[0]])

    def test_validation_rejects_malformed_rows(self) -> None:
        good = flat_row([1, 2, 3])
        validate_row(good, 265, 8192, 0)
        cases = [
            PackedRow(torch.tensor([1, 2]), torch.tensor([-1, 1]), torch.tensor([0, 1])),  # parent not earlier
            PackedRow(torch.tensor([1, 300]), torch.tensor([-1, 0]), torch.tensor([0, 1])),  # token out of vocab
            PackedRow(torch.tensor([1, 2]), torch.tensor([-1, 0]), torch.tensor([0, 2])),  # position skips
            PackedRow(torch.tensor([1, 2]), torch.tensor([-1, 0]), torch.tensor([9000, 9001])),  # beyond context
        ]
        for i, row in enumerate(cases):
            with self.assertRaises(WorkerError, msg=str(i)) as e:
                validate_row(row, 265, 8192, 0)
            self.assertEqual(e.exception.code, "bad_request")


if __name__ == "__main__":
    unittest.main()
