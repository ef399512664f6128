"""Padded vocabulary rows (docs/model-dir.md): ids without text in the tokenizer are left out of every softmax, so
the trainer's logprobs are those of the distribution the engines sample from."""
from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path
from typing import List

import torch
import torch.nn.functional as F

from harnessrl_worker import packed
from harnessrl_worker.errors import WorkerError
from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.modeldir import load_model_dir
from harnessrl_worker.packed import forward_micro_batches, packed_scores, score_tokens
from harnessrl_worker.vocab import textless_ids

from .helpers import QWEN3_HF, small_config, write_hf_checkpoint
from .test_packed import flat_row


def hf_tokenizer(vocab_ids: List[int], added_ids: List[int]) -> dict:
    return {"model": {"type": "BPE", "vocab": {f"t{i}": i for i in vocab_ids}, "merges": []}, "added_tokens": [{"id": i, "content": f"<s{i}>", "special": True} for i in added_ids]}


def reference_scores(model: CausalLM, hidden: torch.Tensor, targets: torch.Tensor, excluded: List[int], temperature: float):
    """Full-vocabulary logits with the excluded ids at −inf, log_softmax: the masked distribution written plainly."""
    w = model.model.embed_tokens.weight if model.lm_head is None else model.lm_head.weight
    z = F.linear(hidden, w).double() / temperature
    z[:, excluded] = float("-inf")
    logp = F.log_softmax(z, dim=-1)
    p = logp.exp()
    ent = -(p * logp.masked_fill(p == 0, 0)).sum(-1)
    return logp.gather(1, targets[:, None]).squeeze(1), ent


class TextlessIdsTest(unittest.TestCase):
    def test_ids_without_text_are_padded_rows_and_holes(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            (root / "tokenizer.json").write_text(json.dumps(hf_tokenizer([i for i in range(40) if i != 7], [40, 41, 42])))
            self.assertEqual(textless_ids(root, 48), [7, 43, 44, 45, 46, 47])
            self.assertEqual(textless_ids(root, 43), [7])

    def test_byte_tokenizer_and_unknown_tokenizers(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            self.assertEqual(textless_ids(root, 300), [])  # no tokenizer.json: every row kept
            (root / "tokenizer.json").write_text(json.dumps({"harnessrl": {"type": "bytes", "special_tokens": ["a", "b", "c"]}}))
            self.assertEqual(textless_ids(root, 262), [259, 260, 261])
            self.assertEqual(textless_ids(root, 259), [])

    def test_qwen3_tokenizer_has_no_holes(self) -> None:
        from harnessrl_worker.modeldir import QWEN3_TOKENIZER_DIR

        if not (QWEN3_TOKENIZER_DIR / "tokenizer.json").exists():
            self.skipTest("Qwen3 tokenizer files not installed")
        self.assertEqual(textless_ids(QWEN3_TOKENIZER_DIR, 151_936), list(range(151_669, 151_936)))


class MaskedLogSoftmaxTest(unittest.TestCase):
    def setUp(self) -> None:
        torch.manual_seed(0)
        self.model = CausalLM(small_config(vocab=61)).double()
        init_weights(self.model, 3, std=0.3)
        self.model.double().eval()
        # Hole 7, padded rows 50..60 (a trailing run: cut off the projection).
        self.excluded = [7] + list(range(50, 61))
        self.model.restrict_vocab(self.excluded)
        self.row = flat_row([1, 5, 9, 12, 3, 44, 49, 0, 8, 30, 2, 6])

    def test_restrict_vocab_cuts_trailing_rows_and_masks_holes(self) -> None:
        self.assertEqual(self.model.sampled_rows, 50)
        self.assertEqual(self.model.output_weight().shape[0], 50)
        self.assertEqual(self.model.textless.tolist(), [7])
        # Never saved: the checkpoint keeps every row.
        self.assertEqual(self.model.state_dict()["model.embed_tokens.weight"].shape[0], 61)

    def test_logprobs_and_entropy_equal_the_masked_softmax_on_both_paths(self) -> None:
        for temperature in (1.0, 0.7):
            with torch.no_grad():
                (_, [hidden]), = list(forward_micro_batches(self.model, [self.row], 4096))
                want_lp, want_ent = reference_scores(self.model, hidden[:-1], self.row.tokens[1:], self.excluded, temperature)
                for recompute in (False, True):
                    lp, ent = score_tokens(self.model, hidden, self.row, temperature, recompute=recompute)
                    self.assertTrue(torch.isfinite(ent).all())
                    torch.testing.assert_close(lp[1:], want_lp, rtol=0, atol=1e-10)
                    torch.testing.assert_close(ent[1:], want_ent, rtol=0, atol=1e-10)
                # An unmasked softmax differs by log(1 − excluded mass): the test can tell them apart.
                unmasked, _ = reference_scores(self.model, hidden[:-1], self.row.tokens[1:], [], temperature)
                self.assertGreater(float((unmasked - want_lp).abs().min()), 1e-3)

    def _embedding_grads(self, entropy_weight: float) -> List[torch.Tensor]:
        """Gradients of Σ log p + w · Σ H on the direct path, the recomputing path and the masked-softmax reference."""
        grads = []
        for recompute in (False, True, None):
            self.model.zero_grad()
            (_, [hidden]), = list(forward_micro_batches(self.model, [self.row], 4096))
            if recompute is None:
                lp, ent = reference_scores(self.model, hidden[:-1], self.row.tokens[1:], self.excluded, 1.0)
            else:
                lp, ent = score_tokens(self.model, hidden, self.row, 1.0, recompute=recompute)
            (lp.sum() + entropy_weight * ent.sum()).backward()
            grads.append(self.model.model.embed_tokens.weight.grad.clone())
        return grads

    def test_gradients_equal_the_masked_softmax_and_skip_excluded_rows(self) -> None:
        grads = self._embedding_grads(0.3)
        for g in grads[:2]:
            torch.testing.assert_close(g, grads[2], rtol=1e-9, atol=1e-12)

    def test_entropy_weights_of_one_and_more_keep_gradients_finite_at_masked_ids(self) -> None:
        # A masked id's log p is the dtype's lowest value: times an entropy weight |w| >= 1 it overflowed to -inf,
        # and -inf times its probability 0 is NaN, in every gradient of the step.
        for weight in (1.0, 2.5, -1.5):
            grads = self._embedding_grads(weight)
            for g in grads:
                self.assertTrue(torch.isfinite(g).all(), f"entropy weight {weight}")
            for g in grads[:2]:
                torch.testing.assert_close(g, grads[2], rtol=1e-9, atol=1e-12)

    def test_recomputed_masked_scores_pass_gradcheck(self) -> None:
        gen = torch.Generator().manual_seed(4)
        hidden = torch.randn(6, 5, generator=gen, dtype=torch.float64, requires_grad=True)
        weight = torch.randn(11, 5, generator=gen, dtype=torch.float64, requires_grad=True)
        targets = torch.tensor([0, 3, 10, 3, 7, 1])
        textless = torch.tensor([2, 5])
        fn = lambda h, w: packed._ChunkScores.apply(h, w, targets, 0.7, torch.float64, textless)  # noqa: E731
        self.assertTrue(torch.autograd.gradcheck(fn, (hidden, weight)))

    def test_packed_scores_and_a_target_without_a_row(self) -> None:
        scores = packed_scores(self.model, [self.row], 1.0)
        self.assertTrue(torch.isfinite(scores.logprobs[0]).all())
        with self.assertRaises(WorkerError):
            packed_scores(self.model, [flat_row([1, 2, 55])], 1.0)


class LoadedDirectoryTest(unittest.TestCase):
    def test_a_padded_checkpoint_loads_restricted_to_its_tokenizer(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            hf = {**QWEN3_HF, "vocab_size": 70}
            write_hf_checkpoint(root, "qwen3", hf, seed=1)
            (root / "tokenizer.json").write_text(json.dumps(hf_tokenizer(list(range(60)), [60, 61])))
            loaded = load_model_dir(root, torch.device("cpu"))
            self.assertEqual(loaded.model.sampled_rows, 62)
            self.assertIsNone(loaded.model.textless)


if __name__ == "__main__":
    unittest.main()
