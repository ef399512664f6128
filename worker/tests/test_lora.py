"""LoRA adapters (lora.py, ops/lora_ops.py): exact start at the base, gradients and optimizer state on the adapters
only, every attention path sees them, merged weights score like the adapted model, PEFT files, exact resume."""
from __future__ import annotations

import json
import random
import tempfile
import unittest
from pathlib import Path
from typing import Any, Dict, List, Tuple

import torch

from harnessrl_worker import packed, safetensors as st, segments
from harnessrl_worker.lora import PEFT_PREFIX, LoraConfig, attach
from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.modeldir import LoadedModel, load_model_dir
from harnessrl_worker.server import handle
from harnessrl_worker.state import WorkerSettings, WorkerState

from .helpers import small_config
from .test_checkpoint import training_frames
from .test_long_rows import loss_and_grads, trainable_masks, tree_rows
from .test_train import call

LORA = {"rank": 4, "alpha": 8.0}


def attach_live_adapters(model: CausalLM) -> None:
    """Rank-3 adapters on every projection with B ≠ 0 (a fresh B is 0: the adapters would not change the forward)."""
    attach(model, LoraConfig(3, 6.0), seed=4)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("lora_B"):
                p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(len(n))) * 0.3)


def fresh_state() -> WorkerState:
    return WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))


def base_state(tmp: Path, model_type: str = "qwen3", tied: bool = True) -> WorkerState:
    """A small random model saved as a base directory and loaded from it (as a run's policy/v0000 is)."""
    model = CausalLM(small_config(model_type, tied=tied))
    init_weights(model, 5, std=0.2)
    state = fresh_state()
    state.loaded = LoadedModel(model, model.config, None)
    call(state, "save", {"dir": str(tmp / "base")})
    return state


def scores(state: WorkerState, seed: int = 1) -> torch.Tensor:
    lengths, frames = training_frames(seed)
    _, out = call(state, "logprobs", {"row_lengths": lengths, "temperature": 0.9}, {k: frames[k] for k in ("tokens", "parent", "positions")})
    return out["logprobs"]


def step(state: WorkerState, seed: int, lr: float = 0.05) -> Dict[str, Any]:
    lengths, frames = training_frames(seed)
    fb, _ = call(state, "forward_backward", {"row_lengths": lengths, "loss": {"tis_cap": 1.5}}, frames)
    call(state, "optim_step", {"lr": lr, "weight_decay": 0.01, "max_grad_norm": 0.5})
    return fb


def error(state: WorkerState, op: str, args: Dict[str, Any]) -> Dict[str, Any]:
    body, _ = handle(state, {"id": 1, "op": op, "args": args}, {})
    assert not body["ok"], body
    return body["error"]


class LoraTest(unittest.TestCase):
    def test_adapted_model_starts_exactly_at_its_base(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            state = base_state(Path(d))
            before = scores(state)
            info, _ = call(state, "lora_init", {**LORA, "base_dir": str(Path(d) / "base")})
            # 2 layers × 7 projections; A [4, in] + B [out, 4] each.
            self.assertEqual(info["adapters"], 14)
            self.assertEqual(info["scale"], 2.0)
            self.assertLess(info["trainable_parameters"], info["base_parameters"] / 2)
            self.assertTrue(torch.equal(scores(state), before))

    def test_gradients_and_optimizer_state_only_on_the_adapters(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            state = base_state(Path(d), "qwen2")
            base = {n: p.detach().clone() for n, p in state.require_model().model.named_parameters()}
            call(state, "lora_init", {**LORA, "target_modules": "q_proj,v_proj,down_proj", "base_dir": str(Path(d) / "base")})
            model = state.require_model().model
            adapters = {n for n, _ in model.named_parameters() if ".lora_" in n}
            self.assertEqual(len(adapters), 2 * 3 * 2)
            self.assertTrue(all(p.requires_grad == (n in adapters) for n, p in model.named_parameters()))
            step(state, 1)
            lengths, frames = training_frames(2)
            call(state, "forward_backward", {"row_lengths": lengths}, frames)
            with_grad = {n for n, p in model.named_parameters() if p.grad is not None}
            self.assertEqual(with_grad, adapters)
            self.assertTrue(all(float(p.grad.abs().sum()) > 0 for n, p in model.named_parameters() if n in adapters))  # type: ignore[union-attr]
            call(state, "optim_step", {"lr": 0.05})
            opt = state.extensions["optim"].optimizer
            held = {id(p) for g in opt.param_groups for p in g["params"]}
            self.assertEqual(held, {id(p) for n, p in model.named_parameters() if n in adapters})
            self.assertEqual(len(opt.state), len(adapters))
            # The frozen base is exactly as loaded; the adapters moved.
            for n, p in model.named_parameters():
                if n in adapters:
                    continue
                self.assertTrue(torch.equal(p, base[n]), n)

    def test_every_attention_path_sees_the_adapters(self) -> None:
        rng = random.Random(11)
        rows = tree_rows(rng)
        train = trainable_masks(rows, rng)
        saved = (segments.QUERY_BLOCK, packed.LOGIT_CHUNK_ELEMENTS)
        segments.QUERY_BLOCK, packed.LOGIT_CHUNK_ELEMENTS = 4, 61 * 7
        try:
            cfg = small_config("qwen3", tied=False)
            seg = CausalLM(cfg, attention="auto")
            init_weights(seg, 3, std=0.3)
            dense = CausalLM(cfg, attention="eager")
            dense.load_state_dict(seg.state_dict())
            for m in (seg, dense):
                attach_live_adapters(m)
                m.to(torch.float64)
            stored = loss_and_grads(seg, rows, train, long_rows=False)
            long = loss_and_grads(seg, rows, train, long_rows=True)
            padded = loss_and_grads(dense, rows, train, long_rows=False)
            seg.gradient_checkpointing = True
            seg.train()
            checkpointed = loss_and_grads(seg, rows, train, long_rows=False)
            self.assertTrue(all(".lora_" in n for n in stored[1]) and len(stored[1]) == 2 * 7 * 2)
            for what, other in (("long rows", long), ("dense mask", padded), ("gradient checkpointing", checkpointed)):
                for x, y in zip(stored[0], other[0]):
                    self.assertLess(float((x - y).abs().max()), 1e-10, what)
                self.assertEqual(set(stored[1]), set(other[1]), what)
                for n in stored[1]:
                    self.assertLess(float((stored[1][n] - other[1][n]).abs().max()), 1e-10 * (1 + float(stored[1][n].abs().max())), f"{what}: {n}")
        finally:
            segments.QUERY_BLOCK, packed.LOGIT_CHUNK_ELEMENTS = saved

    def test_saved_merged_weights_score_like_the_adapted_model_and_the_peft_files_merge_to_them(self) -> None:
        for model_type, tied in (("qwen3", True), ("qwen2", False)):
            with tempfile.TemporaryDirectory() as d:
                tmp = Path(d)
                state = base_state(tmp, model_type, tied)
                call(state, "lora_init", {**LORA, "dropout": 0.0, "base_dir": str(tmp / "base")})
                for s in range(3):
                    step(state, s, lr=0.05)
                adapted = scores(state)
                self.assertGreater(float((adapted - scores(load_state(tmp / "base"))).abs().max()), 1e-3)  # it learned
                call(state, "save", {"dir": str(tmp / "v1"), "policy_version": 1})
                merged = load_state(tmp / "v1")
                self.assertLess(float((scores(merged) - adapted).abs().max()), 1e-5, model_type)
                # PEFT layout: config fields vLLM/SGLang read, and W_base + alpha/r · B A = the saved merged weight.
                cfg = json.loads((tmp / "v1" / "adapter" / "adapter_config.json").read_text())
                self.assertEqual((cfg["peft_type"], cfg["r"], cfg["lora_alpha"], cfg["base_model_name_or_path"]), ("LORA", 4, 8.0, str((tmp / "base").resolve())))
                self.assertEqual(cfg["target_modules"], ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
                adapter = st.load_file(tmp / "v1" / "adapter" / "adapter_model.safetensors")
                self.assertEqual(len(adapter), 2 * 7 * 2)
                base_w, merged_w = st.load_checkpoint(tmp / "base"), st.load_checkpoint(tmp / "v1")
                for name in ("model.layers.1.self_attn.k_proj", "model.layers.0.mlp.down_proj"):
                    a, b = adapter[f"{PEFT_PREFIX}{name}.lora_A.weight"], adapter[f"{PEFT_PREFIX}{name}.lora_B.weight"]
                    self.assertEqual((a.shape[0], b.shape[1]), (4, 4))
                    by_hand = base_w[f"{name}.weight"] + 2.0 * (b @ a)
                    self.assertLess(float((by_hand - merged_w[f"{name}.weight"]).abs().max()), 1e-6, name)
                self.assertFalse(any(".lora_" in k for k in merged_w))

    def test_checkpoint_resume_is_exact_with_dropout_and_refers_to_its_base(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            state = base_state(tmp)
            call(state, "lora_init", {**LORA, "dropout": 0.1, "seed": 3, "base_dir": str(tmp / "base")})
            step(state, 1)
            step(state, 2)
            saved, _ = call(state, "checkpoint_save", {"dir": str(tmp / "ckpt"), "policy_version": 2, "extra": {"step": 2}})
            self.assertTrue(saved["lora"])
            trainer_state = json.loads((tmp / "ckpt" / "trainer_state.json").read_text())
            self.assertEqual(trainer_state["lora"]["base_dir"], str((tmp / "base").resolve()))
            self.assertTrue(all(".lora_" in n for g in trainer_state["param_groups"] for n in g["params"]))
            step(state, 3)  # draws dropout masks from the RNG as saved; the resumed worker must draw the same
            expected = {k: v.clone() for k, v in state.require_model().model.state_dict().items()}
            fresh = fresh_state()
            resumed, _ = call(fresh, "checkpoint_load", {"dir": str(tmp / "ckpt")})
            self.assertEqual((resumed["lora"], resumed["optimizer_steps"], resumed["policy_version"], resumed["extra"]), (True, 2, 2, {"step": 2}))
            step(fresh, 3)
            got = fresh.require_model().model.state_dict()
            self.assertEqual(set(got), set(expected))
            for k, v in expected.items():
                self.assertTrue(torch.equal(got[k], v), k)
            # Another seed's dropout masks give other weights: the comparison can fail.
            other = fresh_state()
            call(other, "checkpoint_load", {"dir": str(tmp / "ckpt")})
            torch.manual_seed(5)
            step(other, 3)
            self.assertFalse(all(torch.equal(other.require_model().model.state_dict()[k], v) for k, v in expected.items()))
            # A changed base is refused, a missing one named.
            changed = load_model_dir(tmp / "base", torch.device("cpu"))
            with torch.no_grad():
                changed.model.model.norm.weight.add_(0.5)
            changed_state = fresh_state()
            changed_state.loaded = changed
            call(changed_state, "save", {})
            self.assertEqual(error(fresh_state(), "checkpoint_load", {"dir": str(tmp / "ckpt")})["code"], "invalid_model")
            (tmp / "base" / "config.json").unlink()
            err = error(fresh_state(), "checkpoint_load", {"dir": str(tmp / "ckpt")})
            self.assertEqual(err["code"], "not_found")
            self.assertIn("base", err["message"])

    def test_lora_init_refuses_a_base_dir_with_other_weights_and_bad_configs(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            state = base_state(Path(d))
            step(state, 1)  # the loaded weights now differ from what base/ holds
            self.assertIn("does not hold the weights", error(state, "lora_init", {**LORA, "base_dir": str(Path(d) / "base")})["message"])
            call(state, "save", {})
            for bad in ({"rank": 0}, {"rank": 2, "dropout": 1.0}, {"rank": 2, "target_modules": "q_proj,lm_head"}):
                self.assertEqual(error(state, "lora_init", {**bad, "base_dir": str(Path(d) / "base")})["code"], "bad_request")
            call(state, "lora_init", {"rank": 2, "base_dir": str(Path(d) / "base")})
            self.assertIn("already", error(state, "lora_init", {"rank": 2, "base_dir": str(Path(d) / "base")})["message"])


def load_state(directory: Path) -> WorkerState:
    state = fresh_state()
    call(state, "load", {"dir": str(directory)})
    return state


if __name__ == "__main__":
    unittest.main()
