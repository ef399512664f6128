"""Checkpoints: saving mid-training and resuming in a fresh worker state reproduces the next step bit for bit."""
from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path
from typing import Dict

import torch

from harnessrl_worker import safetensors as st
from harnessrl_worker.model import CausalLM, init_weights
from harnessrl_worker.modeldir import load_model_dir
from harnessrl_worker.server import handle
from harnessrl_worker.state import WorkerSettings, WorkerState

from .helpers import small_config
from .test_capo import probe_frames
from .test_packed import flat_row
from .test_train import batch_frames, call, make_state


def training_frames(seed: int) -> tuple[list[int], Dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    rows = [flat_row(torch.randint(0, 61, (12,), generator=gen).tolist()) for _ in range(2)]
    n = 24
    per_token = {"old_logprobs": (-torch.rand(n, generator=gen) * 3).tolist(), "advantages": torch.randn(n, generator=gen).tolist(), "loss_weights": [1.0 / n] * n}
    return [12, 12], batch_frames(rows, per_token, [0] + [1] * 11 + [0] + [1] * 11)


def step(state: WorkerState, seed: int) -> None:
    lengths, frames = training_frames(seed)
    call(state, "forward_backward", {"row_lengths": lengths, "loss": {"tis_cap": 1.5}}, frames)
    call(state, "optim_step", {"lr": 0.003, "weight_decay": 0.01, "max_grad_norm": 0.5})


def capo_frames() -> tuple[list[int], Dict[str, torch.Tensor]]:
    """Two rows whose tokens 4-6 are an action (tool name) and 7-12 its arguments."""
    gen = torch.Generator().manual_seed(9)
    rows = [flat_row(torch.randint(0, 61, (14,), generator=gen).tolist()) for _ in range(2)]
    n = 28
    frames = batch_frames(rows, {"old_logprobs": [-2.0] * n, "advantages": torch.linspace(-1, 1, n).tolist(), "loss_weights": [1.0 / n] * n}, ([0] * 4 + [1] * 9 + [0]) * 2)
    frames["action_mask"] = torch.tensor(([0] * 4 + [1] * 3 + [0] * 7) * 2, dtype=torch.uint8)
    frames["args_mask"] = torch.tensor(([0] * 7 + [1] * 6 + [0]) * 2, dtype=torch.uint8)
    return [14, 14], frames


def capo_step(state: WorkerState) -> None:
    lengths, frames = capo_frames()
    call(state, "forward_backward", {"row_lengths": lengths, "capo": True}, frames)
    call(state, "optim_step", {"lr": 0.01, "weight_decay": 0.1, "capo": True})


class CheckpointTest(unittest.TestCase):
    def test_resume_reproduces_the_next_step_exactly(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 5)
        state = make_state(model)
        with tempfile.TemporaryDirectory() as tmp:
            ckpt = Path(tmp) / "ckpt"
            step(state, 1)
            step(state, 2)
            saved, _ = call(state, "checkpoint_save", {"dir": str(ckpt), "policy_version": 2, "extra": {"run_step": 2, "data_cursor": [3, 7]}})
            self.assertEqual(saved["optimizer_steps"], 2)
            torch.manual_seed(1234)  # the checkpoint's RNG state must win over whatever happens in between
            step(state, 3)
            expected = {k: v.clone() for k, v in state.require_model().model.state_dict().items()}
            # A fresh worker state resumes from the checkpoint.
            fresh = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
            resumed, _ = call(fresh, "checkpoint_load", {"dir": str(ckpt)})
            self.assertEqual((resumed["optimizer_steps"], resumed["policy_version"], resumed["extra"]), (2, 2, {"run_step": 2, "data_cursor": [3, 7]}))
            step(fresh, 3)
            got = fresh.require_model().model.state_dict()
            for k, v in expected.items():
                self.assertTrue(torch.equal(got[k], v), k)
            self.assertEqual(call(fresh, "optim_step", {"lr": 0.1})[0]["step"], 3)  # skipped (no grads), count kept
            # Without the optimizer state (a plain load), the same step gives different weights: the test can fail.
            plain = make_state(load_model_dir(ckpt, torch.device("cpu")).model)
            step(plain, 3)
            self.assertFalse(all(torch.equal(plain.require_model().model.state_dict()[k], v) for k, v in expected.items()))
            # The checkpoint is also an ordinary model directory.
            self.assertTrue((ckpt / "config.json").exists() and (ckpt / "model.safetensors").exists())

    def test_resume_includes_the_critic_and_its_optimizer(self) -> None:
        model = CausalLM(small_config("qwen2"))
        init_weights(model, 8)
        state = make_state(model)
        lengths, frames = training_frames(4)
        n = sum(lengths)
        critic_frames = {k: frames[k] for k in ("tokens", "parent", "positions", "trainable", "loss_weights")}
        critic_frames["returns"] = torch.linspace(-1, 1, n)

        def critic_step(s: WorkerState) -> None:
            call(s, "critic_forward_backward", {"row_lengths": lengths}, critic_frames)
            call(s, "critic_optim_step", {"lr": 0.01})

        call(state, "critic_init", {})
        critic_step(state)
        with tempfile.TemporaryDirectory() as tmp:
            saved, _ = call(state, "checkpoint_save", {"dir": tmp})
            self.assertTrue(saved["critic"])
            critic_step(state)
            expected = {k: v.clone() for k, v in state.extensions["critic"].critic.state_dict().items()}
            fresh = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
            resumed, _ = call(fresh, "checkpoint_load", {"dir": tmp})
            self.assertTrue(resumed["critic"])
            critic_step(fresh)
            got = fresh.extensions["critic"].critic.state_dict()
            for k, v in expected.items():
                self.assertTrue(torch.equal(got[k], v), k)

    def test_resume_keeps_the_capo_partitions_and_the_masked_step_exactly(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 3, std=0.3)
        state = make_state(model)
        lengths, frames = capo_frames()
        call(state, "capo_probe", {"row_lengths": lengths, "top_fraction": 0.25}, probe_frames(frames))
        capo_step(state)
        with tempfile.TemporaryDirectory() as tmp:
            saved, _ = call(state, "checkpoint_save", {"dir": tmp})
            self.assertTrue(saved["capo"])
            capo_step(state)
            expected = {k: v.clone() for k, v in state.require_model().model.state_dict().items()}
            masks = state.extensions["capo"]
            fresh = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
            resumed, _ = call(fresh, "checkpoint_load", {"dir": tmp})
            self.assertTrue(resumed["capo"])
            got_masks = fresh.extensions["capo"]
            self.assertEqual(got_masks.top_fraction, 0.25)
            for a, b in zip(masks.action_units + masks.args_units, got_masks.action_units + got_masks.args_units):
                self.assertTrue(torch.equal(a, b))
            capo_step(fresh)  # no re-probe: the restored partitions drive the masked step
            got = fresh.require_model().model.state_dict()
            for k, v in expected.items():
                self.assertTrue(torch.equal(got[k], v), k)
            # Other partitions (a re-probe with another fraction) give other weights: the comparison can fail.
            other = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
            call(other, "checkpoint_load", {"dir": tmp})
            call(other, "capo_probe", {"row_lengths": lengths, "top_fraction": 0.5}, probe_frames(frames))
            capo_step(other)
            self.assertFalse(all(torch.equal(other.require_model().model.state_dict()[k], v) for k, v in expected.items()))

    def test_a_checkpoint_without_partitions_leaves_none_behind(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 3, std=0.3)
        state = make_state(model)
        with tempfile.TemporaryDirectory() as tmp:
            plain = Path(tmp) / "plain"
            saved, _ = call(state, "checkpoint_save", {"dir": str(plain)})
            self.assertFalse(saved["capo"])
            lengths, frames = capo_frames()
            call(state, "capo_probe", {"row_lengths": lengths}, probe_frames(frames))
            # Loading it replaces the partitions of the weights held before: a CAPO step now asks for a probe.
            resumed, _ = call(state, "checkpoint_load", {"dir": str(plain)})
            self.assertFalse(resumed["capo"])
            body, _ = handle(state, {"id": 1, "op": "forward_backward", "args": {"row_lengths": lengths, "capo": True}}, frames)
            self.assertEqual(body["error"]["code"], "no_capo_masks")
            # A format-1 checkpoint (written before partitions were saved) still loads, without partitions.
            meta = plain / "trainer_state.json"
            old = json.loads(meta.read_text("utf-8"))
            old["format"] = 1
            del old["capo"]
            meta.write_text(json.dumps(old), "utf-8")
            resumed, _ = call(WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1)), "checkpoint_load", {"dir": str(plain)})
            self.assertFalse(resumed["capo"])

    def test_partitions_that_do_not_fit_the_model_are_a_clear_error(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 3, std=0.3)
        state = make_state(model)
        lengths, frames = capo_frames()
        call(state, "capo_probe", {"row_lengths": lengths}, probe_frames(frames))
        with tempfile.TemporaryDirectory() as tmp:
            call(state, "checkpoint_save", {"dir": tmp})
            optim = Path(tmp) / "optimizer.safetensors"
            tensors = st.load_file(optim)
            tensors["capo.args.1"] = tensors["capo.args.1"][:-1]
            st.save_file(tensors, optim)
            # A complete (marker-consistent) checkpoint whose partitions are wrong, not a partly written one.
            marker = Path(tmp) / "trainer_state.json"
            saved = json.loads(marker.read_text("utf-8"))
            saved["files"]["optimizer.safetensors"] = optim.stat().st_size
            marker.write_text(json.dumps(saved), "utf-8")
            body, _ = handle(WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1)), {"id": 1, "op": "checkpoint_load", "args": {"dir": tmp}}, {})
            self.assertEqual(body["error"]["code"], "invalid_model")
            self.assertIn("layer 1", body["error"]["message"])

    def test_a_partly_written_checkpoint_is_refused_and_a_rewrite_invalidates_it_first(self) -> None:
        model = CausalLM(small_config("qwen3"))
        init_weights(model, 3)
        state = make_state(model)
        step(state, 1)
        with tempfile.TemporaryDirectory() as tmp:
            call(state, "checkpoint_save", {"dir": tmp})
            marker = json.loads((Path(tmp) / "trainer_state.json").read_text("utf-8"))
            self.assertIn("optimizer.safetensors", marker["files"])
            self.assertIn("config.json", marker["files"])
            # Cut off mid-write: a truncated optimizer file.
            optim = Path(tmp) / "optimizer.safetensors"
            optim.write_bytes(optim.read_bytes()[:100])
            fresh = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
            body, _ = handle(fresh, {"id": 1, "op": "checkpoint_load", "args": {"dir": tmp}}, {})
            self.assertEqual(body["error"]["code"], "invalid_model")
            self.assertIn("incomplete checkpoint", body["error"]["message"])
            # A save into an existing checkpoint removes the marker before anything else is written.
            seen: Dict[str, bool] = {}
            import harnessrl_worker.checkpoint as ck

            original = ck.save_model_dir

            def spy(*a: object, **k: object) -> None:
                seen["marker_during_write"] = (Path(tmp) / "trainer_state.json").exists()
                original(*a, **k)  # type: ignore[arg-type]

            ck.save_model_dir = spy  # type: ignore[assignment]
            try:
                call(state, "checkpoint_save", {"dir": tmp})
            finally:
                ck.save_model_dir = original
            self.assertEqual(seen, {"marker_during_write": False})
            body, _ = handle(fresh, {"id": 2, "op": "checkpoint_load", "args": {"dir": tmp}}, {})
            self.assertTrue(body["ok"], body)

    def test_rng_state_is_restored(self) -> None:
        state = make_state(CausalLM(small_config()))
        with tempfile.TemporaryDirectory() as tmp:
            torch.manual_seed(7)
            call(state, "checkpoint_save", {"dir": tmp})
            after_save = torch.rand(3)
            torch.manual_seed(99)
            fresh = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
            resumed, _ = call(fresh, "checkpoint_load", {"dir": tmp})
            self.assertEqual(resumed["optimizer_steps"], 0)
            self.assertTrue(torch.equal(torch.rand(3), after_save))

    def test_loading_a_plain_model_dir_as_checkpoint_is_a_clear_error(self) -> None:
        state = make_state(CausalLM(small_config()))
        with tempfile.TemporaryDirectory() as tmp:
            call(state, "save", {"dir": tmp})
            body, _ = handle(WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1)), {"id": 1, "op": "checkpoint_load", "args": {"dir": tmp}}, {})
            self.assertEqual(body["error"]["code"], "not_found")


if __name__ == "__main__":
    unittest.main()
