"""The decoder: shapes, parameter counts, GQA, tied/untied heads, seeded init, HF-name loading (qwen2 and qwen3)."""
from __future__ import annotations

import json
import tempfile
import unittest
from dataclasses import replace
from pathlib import Path

import torch

from harnessrl_worker.config import ModelConfig
from harnessrl_worker.errors import WorkerError
from harnessrl_worker.model import CausalLM, hf_state_dict, init_weights
from harnessrl_worker.modeldir import init_model_dir, load_model_dir, read_config, save_model_dir
from harnessrl_worker.presets import PRESETS

from .helpers import QWEN2_HF, QWEN3_HF, hf_tensor_shapes, reference_logits, small_config, write_hf_checkpoint


def causal_logits(model: CausalLM, ids: list[int]) -> torch.Tensor:
    n = len(ids)
    x = torch.tensor([ids])
    mask = torch.ones(n, n, dtype=torch.bool).tril()[None]
    with torch.no_grad():
        return model.logits(model.hidden_states(x, torch.arange(n)[None], mask))[0]


class ModelTest(unittest.TestCase):
    def test_presets_have_the_advertised_sizes_and_context(self) -> None:
        for name, lo, hi in (("tiny-1m", 0.8e6, 1.3e6), ("tiny-10m", 8e6, 12e6)):
            cfg = PRESETS[name].config
            model = CausalLM(cfg)
            self.assertEqual(model.num_parameters(), cfg.num_parameters(), name)
            self.assertTrue(lo <= cfg.num_parameters() <= hi, f"{name}: {cfg.num_parameters()}")
            self.assertEqual(cfg.vocab_size, 265)
            self.assertGreaterEqual(cfg.max_position_embeddings, 4096)

    def test_parameter_names_are_the_hf_names(self) -> None:
        for model_type, hf in (("qwen2", QWEN2_HF), ("qwen3", QWEN3_HF)):
            cfg = ModelConfig.from_hf({"model_type": model_type, **hf})
            ours = {k: tuple(v.shape) for k, v in hf_state_dict(CausalLM(cfg)).items()}
            self.assertEqual(ours, dict(hf_tensor_shapes(model_type, hf)), model_type)
            self.assertEqual(CausalLM(cfg).num_parameters(), cfg.num_parameters())

    def test_reads_newer_config_spellings_and_rejects_unsupported_features(self) -> None:
        newer = {k: v for k, v in QWEN3_HF.items() if k not in ("rope_theta", "torch_dtype", "rope_scaling")}
        cfg = ModelConfig.from_hf({"model_type": "qwen3", **newer, "dtype": "bfloat16", "rope_parameters": {"rope_type": "default", "rope_theta": 5e5}})
        self.assertEqual((cfg.rope_theta, cfg.torch_dtype), (5e5, "bfloat16"))
        for bad in ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, {"use_sliding_window": True}, {"model_type": "llama"}, {"num_key_value_heads": 3}):
            with self.assertRaises(WorkerError, msg=str(bad)):
                ModelConfig.from_hf({"model_type": "qwen3", **QWEN3_HF, **bad})

    def test_qwen3_attention_bias_adds_all_four_biases(self) -> None:
        cfg = replace(small_config("qwen3"), attention_bias=True)
        names = set(hf_state_dict(CausalLM(cfg)))
        for proj in "qkvo":
            self.assertIn(f"model.layers.0.self_attn.{proj}_proj.bias", names)
        self.assertNotIn("model.layers.0.self_attn.o_proj.bias", set(hf_state_dict(CausalLM(small_config("qwen2")))))

    def test_tied_head_shares_the_embedding(self) -> None:
        tied = CausalLM(small_config(tied=True))
        untied = CausalLM(small_config(tied=False))
        self.assertIs(tied.output_weight(), tied.model.embed_tokens.weight)
        self.assertNotIn("lm_head.weight", hf_state_dict(tied))
        self.assertIn("lm_head.weight", hf_state_dict(untied))
        self.assertEqual(untied.num_parameters() - tied.num_parameters(), 61 * 24)

    def test_seeded_init_is_reproducible(self) -> None:
        a, b, c = (CausalLM(small_config()) for _ in range(3))
        init_weights(a, 7)
        init_weights(b, 7)
        init_weights(c, 8)
        sa, sb, sc = hf_state_dict(a), hf_state_dict(b), hf_state_dict(c)
        self.assertTrue(all(torch.equal(sa[k], sb[k]) for k in sa))
        self.assertFalse(torch.equal(sa["model.layers.0.mlp.up_proj.weight"], sc["model.layers.0.mlp.up_proj.weight"]))
        self.assertTrue(torch.equal(sa["model.norm.weight"], torch.ones(24)))

    def test_matches_a_naive_reference_for_both_layouts_with_gqa(self) -> None:
        ids = [3, 17, 9, 9, 40, 1, 65]
        with tempfile.TemporaryDirectory() as tmp:
            for model_type, hf in (("qwen2", QWEN2_HF), ("qwen3", QWEN3_HF)):
                d = Path(tmp) / model_type
                tensors = write_hf_checkpoint(d, model_type, hf, seed=1, shards=2 if model_type == "qwen3" else 1)
                loaded = load_model_dir(d, torch.device("cpu"), "float32", "eager")
                ours = causal_logits(loaded.model, ids)
                ref = reference_logits(tensors, model_type, hf, ids)
                self.assertLess(float((ours.double() - ref).abs().max()), 1e-4, model_type)

    def test_loads_bf16_checkpoints_and_keeps_or_converts_dtype(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            tensors = write_hf_checkpoint(d, "qwen3", QWEN3_HF, seed=2, dtype=torch.bfloat16)
            auto = load_model_dir(d, torch.device("cpu"), "auto")
            self.assertEqual(auto.model.model.embed_tokens.weight.dtype, torch.bfloat16)
            f32 = load_model_dir(d, torch.device("cpu"), "float32")
            w = f32.model.model.layers[1].self_attn.q_norm
            assert w is not None
            self.assertTrue(torch.equal(w.weight, tensors["model.layers.1.self_attn.q_norm.weight"].float()))

    def test_rejects_checkpoints_that_do_not_match_the_config(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            write_hf_checkpoint(d, "qwen2", QWEN2_HF, seed=3)
            cfg = json.loads((d / "config.json").read_text())
            cfg["model_type"] = "qwen3"  # now q_norm/k_norm are missing and biases unexpected
            (d / "config.json").write_text(json.dumps(cfg))
            with self.assertRaises(WorkerError) as e:
                load_model_dir(d, torch.device("cpu"))
            self.assertEqual(e.exception.code, "invalid_model")
            self.assertIn("q_norm", e.exception.message)

    def test_init_writes_a_complete_model_dir_that_reloads_identically(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "m"
            created = init_model_dir("tiny-1m", 5, out, chat_template="{{ messages }}")
            for f in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
                self.assertTrue((out / f).exists(), f)
            cfg = json.loads((out / "config.json").read_text())
            self.assertEqual(cfg["harnessrl"], {"preset": "tiny-1m", "seed": 5, "policy_version": 0})
            self.assertEqual(cfg["architectures"], ["Qwen3ForCausalLM"])
            tok_cfg = json.loads((out / "tokenizer_config.json").read_text())
            self.assertEqual((tok_cfg["eos_token"], tok_cfg["harnessrl_tokenizer"], tok_cfg["chat_template"]), ("<|im_end|>", "bytes", "{{ messages }}"))
            tok = json.loads((out / "tokenizer.json").read_text())["harnessrl"]
            self.assertEqual(tok["type"], "bytes")
            self.assertEqual(tok["special_tokens"][2], "<|im_end|>")
            self.assertEqual(len(tok["special_tokens"]), 9)
            loaded = load_model_dir(out, torch.device("cpu"))
            ids = [256, 257, 104, 105, 258]
            self.assertTrue(torch.equal(causal_logits(created.model, ids), causal_logits(loaded.model, ids)))
            # Save to a new directory with a new policy version: complete, and the version is stamped.
            save_model_dir(loaded, Path(tmp) / "v1", policy_version=1)
            self.assertEqual(read_config(Path(tmp) / "v1").harnessrl.policy_version, 1)
            self.assertTrue((Path(tmp) / "v1" / "tokenizer_config.json").exists())


if __name__ == "__main__":
    unittest.main()
