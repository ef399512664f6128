"""Several worker ranks (torch.distributed, gloo on CPU) behind rank 0's stdio protocol: the same results as one
process, a killed rank failing the step clearly, resume from the last checkpoint, and ranks on two network namespaces.

Real worker processes, one torch thread each (this machine has 2 cores)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import torch

from harnessrl_worker import safetensors as st
from harnessrl_worker.protocol import encode_message, read_message
from harnessrl_worker.synthetic import policy_frames

WORKER_DIR = Path(__file__).resolve().parent.parent
# scripts/gpu-check.sh runs the equivalence test on CUDA (nccl ranks, cuda:<local rank>); here it is the CPU (gloo).
DEVICE = os.environ.get("HARNESSRL_TEST_DEVICE", "cpu")
# float32 everywhere: the ranks sum partial gradients in a different order than one process does (on CUDA, TF32 is off
# by default for matmuls in torch ≥ 1.12, so the same tolerance holds).
RTOL = 1e-5
ATOL = 1e-6


class Worker:
    """One `python3 -m harnessrl_worker` (rank 0 of its layout) driven over stdio, each call bounded in time."""

    def __init__(self, args: List[str], prefix: Optional[List[str]] = None, env: Optional[Dict[str, str]] = None) -> None:
        full_env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(WORKER_DIR), **(env or {})}
        self.proc = subprocess.Popen([*(prefix or []), sys.executable, "-m", "harnessrl_worker", "--device", DEVICE, "--threads", "1", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=WORKER_DIR, env=full_env)
        self.next_id = 1

    def call(self, op: str, args: Optional[Dict[str, Any]] = None, frames: Optional[Dict[str, torch.Tensor]] = None, timeout: float = 120) -> Tuple[Dict[str, Any], Dict[str, torch.Tensor]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(encode_message({"id": self.next_id, "op": op, "args": args or {}}, frames))
        self.proc.stdin.flush()
        self.next_id += 1
        timer = threading.Timer(timeout, self.proc.kill)
        timer.start()
        try:
            msg = read_message(self.proc.stdout)  # type: ignore[arg-type]
        finally:
            timer.cancel()
        assert msg is not None, f"worker exited during {op}"
        return msg.header, msg.frames

    def ok(self, op: str, args: Optional[Dict[str, Any]] = None, frames: Optional[Dict[str, torch.Tensor]] = None) -> Tuple[Dict[str, Any], Dict[str, torch.Tensor]]:
        header, out = self.call(op, args, frames)
        assert header["ok"], f"{op}: {header}"
        return header["result"], out

    def children(self) -> List[int]:
        path = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [int(x) for x in path.read_text().split()] if path.exists() else []

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.call("shutdown", timeout=30)
            except (AssertionError, OSError):
                pass
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


def batch(seed: int) -> Tuple[List[int], Dict[str, torch.Tensor]]:
    """Five flat rows of different lengths and trainable spans (so that row counts and trainable tokens disagree) and
    one tree row (a shared prompt, two branches)."""
    gen = torch.Generator().manual_seed(seed)
    lengths = [40, 12, 30, 8, 25]
    tokens: List[int] = []
    parent: List[int] = []
    positions: List[int] = []
    trainable: List[int] = []
    for n in lengths:
        # Parents index into their own row.
        base = 0
        tokens += torch.randint(0, 256, (n,), generator=gen).tolist()
        parent += [-1] + [base + i for i in range(n - 1)]
        positions += list(range(n))
        cut = int(torch.randint(1, n - 1, (1,), generator=gen))
        trainable += [0] * cut + [1] * (n - cut)
    # Tree row: prompt of 10, then branches of 6 and 5 both hanging off the prompt's last token.
    base = 0
    tokens += torch.randint(0, 256, (21,), generator=gen).tolist()
    parent += [-1] + [base + i for i in range(9)] + [base + 9] + [base + 10 + i for i in range(5)] + [base + 9] + [base + 16 + i for i in range(4)]
    positions += list(range(10)) + list(range(10, 16)) + list(range(10, 15))
    trainable += [0] * 10 + [1] * 11
    lengths.append(21)
    return lengths, policy_frames(tokens, parent, positions, trainable, gen)


def scoring_frames(frames: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    return {k: frames[k] for k in ("tokens", "parent", "positions")}


def train_step(w: Worker, seed: int) -> Dict[str, Any]:
    lengths, frames = batch(seed)
    fb, out = w.ok("forward_backward", {"row_lengths": lengths, "loss": {"entropy_coef": 0.01}}, frames)
    sketch, sk = w.ok("grad_sketch", {"dim": 4096})
    step, _ = w.ok("optim_step", {"lr": 1e-3, "eps": 1e-4, "weight_decay": 0.01})
    return {"fb": fb, "logprobs": out["logprobs"], "sketch": sk["sketch"], "sketch_norm": sketch["grad_norm"], "step": step}


def weights(directory: Path) -> Dict[str, torch.Tensor]:
    return st.load_checkpoint(directory)


class DistributedTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="harnessrl-ddp-"))
        self.workers: List[Worker] = []

    def tearDown(self) -> None:
        for w in self.workers:
            w.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, *args: str, **kw: Any) -> Worker:
        w = Worker(list(args), **kw)
        self.workers.append(w)
        return w

    def session(self, w: Worker, name: str) -> Dict[str, Any]:
        """init, logprobs, one policy step, the critic's values / step, save: everything a rank layout must agree on."""
        w.ok("init", {"preset": "tiny-1m", "seed": 3, "out": str(self.tmp / name)})
        lengths, frames = batch(1)
        _, lp = w.ok("logprobs", {"row_lengths": lengths}, scoring_frames(frames))
        _, lp_needed = w.ok("logprobs", {"row_lengths": lengths, "entropy": False}, {**scoring_frames(frames), "trainable": frames["trainable"]})
        step = train_step(w, 2)
        w.ok("critic_init", {})
        returns = torch.linspace(-1, 1, frames["tokens"].numel())
        critic_fb, critic_out = w.ok("critic_forward_backward", {"row_lengths": lengths}, {**scoring_frames(frames), "trainable": frames["trainable"], "returns": returns, "loss_weights": frames["loss_weights"]})
        critic_step, _ = w.ok("critic_optim_step", {"lr": 1e-3, "eps": 1e-4})
        _, values = w.ok("critic_values", {"row_lengths": lengths}, scoring_frames(frames))
        w.ok("save", {"dir": str(self.tmp / f"{name}-saved"), "policy_version": 1})
        return {"lp": lp, "lp_needed": lp_needed, **step, "critic_fb": critic_fb, "critic_train_values": critic_out["values"], "critic_step": critic_step, "values": values["values"], "weights": weights(self.tmp / f"{name}-saved")}

    def assert_same(self, one: Dict[str, Any], two: Dict[str, Any]) -> None:
        for key in ("logprobs", "sketch", "critic_train_values", "values"):
            torch.testing.assert_close(two[key], one[key], rtol=RTOL, atol=ATOL, msg=key)
        for key in ("logprobs", "entropy"):
            torch.testing.assert_close(two["lp"][key], one["lp"][key], rtol=RTOL, atol=ATOL, msg=f"lp.{key}")
        torch.testing.assert_close(two["lp_needed"]["logprobs"], one["lp_needed"]["logprobs"], rtol=RTOL, atol=ATOL)
        for key in ("loss", "entropy_mean", "nll_mean", "mismatch_abs_max", "clip_fraction"):
            self.assertAlmostEqual(two["fb"][key], one["fb"][key], delta=ATOL + RTOL * abs(one["fb"][key]), msg=key)
        for key in ("trainable_tokens", "rows_forwarded"):
            self.assertEqual(two["fb"][key], one["fb"][key])
        self.assertAlmostEqual(two["step"]["grad_norm"], one["step"]["grad_norm"], delta=RTOL * one["step"]["grad_norm"])
        self.assertAlmostEqual(two["sketch_norm"], one["sketch_norm"], delta=RTOL * one["sketch_norm"])
        self.assertAlmostEqual(two["critic_fb"]["value_loss"], one["critic_fb"]["value_loss"], delta=RTOL * abs(one["critic_fb"]["value_loss"]) + ATOL)
        self.assertEqual(two["critic_fb"]["trainable_tokens"], one["critic_fb"]["trainable_tokens"])
        self.assertEqual(set(two["weights"]), set(one["weights"]))
        for name, t in one["weights"].items():
            torch.testing.assert_close(two["weights"][name], t, rtol=RTOL, atol=ATOL, msg=name)

    def test_two_gloo_ranks_match_one_process_on_the_same_batch(self) -> None:
        one = self.session(self.start(), "one")
        two_ranks = self.start("--world-size", "2")
        two = self.session(two_ranks, "two")
        self.assertEqual(len(two_ranks.children()), 1)
        # The update moved the weights (a test comparing two unchanged models would prove nothing).
        init = weights(self.tmp / "one")
        self.assertGreater(max(float((one["weights"][n] - init[n]).abs().max()) for n in init), 1e-4)
        self.assert_same(one, two)

    def test_a_killed_rank_fails_the_step_clearly_and_the_run_resumes_from_the_last_checkpoint(self) -> None:
        # Reference: one process, step, checkpoint, step.
        ref = self.start()
        ref.ok("init", {"preset": "tiny-1m", "seed": 4, "out": str(self.tmp / "ref")})
        train_step(ref, 5)
        ref.ok("checkpoint_save", {"dir": str(self.tmp / "ref-ck")})
        train_step(ref, 6)
        ref.ok("save", {"dir": str(self.tmp / "ref-after")})

        w = self.start("--world-size", "2")
        w.ok("init", {"preset": "tiny-1m", "seed": 4, "out": str(self.tmp / "run")})
        train_step(w, 5)
        w.ok("checkpoint_save", {"dir": str(self.tmp / "ck")})
        lengths, frames = batch(6)
        w.ok("forward_backward", {"row_lengths": lengths}, frames)
        (rank1,) = w.children()
        os.kill(rank1, 9)
        started = time.monotonic()
        header, _ = w.call("optim_step", {"lr": 1e-3}, timeout=60)
        self.assertLess(time.monotonic() - started, 30)
        self.assertFalse(header["ok"])
        self.assertEqual(header["error"]["code"], "rank_failed")
        self.assertIn("restart the trainer", header["error"]["message"])
        # The layout stays refused (never a half-synchronised step).
        header, _ = w.call("info")
        self.assertEqual(header["error"]["code"], "rank_failed")
        w.close()
        self.assertIsNotNone(w.proc.returncode)

        resumed = self.start("--world-size", "2")
        loaded, _ = resumed.ok("checkpoint_load", {"dir": str(self.tmp / "ck")})
        self.assertEqual(loaded["optimizer_steps"], 1)
        train_step(resumed, 6)
        resumed.ok("save", {"dir": str(self.tmp / "resumed-after")})
        a, b = weights(self.tmp / "ref-after"), weights(self.tmp / "resumed-after")
        for name, t in a.items():
            torch.testing.assert_close(b[name], t, rtol=RTOL, atol=ATOL, msg=name)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("ip"), "needs root and iproute2 (ip netns)")
    def test_ranks_on_two_network_namespace_hosts_train_together(self) -> None:
        tag = f"{os.getpid() % 100000}"
        ns_a, ns_b, veth_a, veth_b = f"hrl-a{tag}", f"hrl-b{tag}", f"hrla{tag}", f"hrlb{tag}"
        # A /30 from a private range chosen per process, so parallel runs do not collide.
        octet = 1 + os.getpid() % 250
        addr_a, addr_b = f"10.231.{octet}.1", f"10.231.{octet}.2"

        def sh(*cmd: str) -> None:
            subprocess.run(cmd, check=True, capture_output=True, timeout=30)

        followers: List[subprocess.Popen] = []
        try:
            sh("ip", "netns", "add", ns_a)
            sh("ip", "netns", "add", ns_b)
            sh("ip", "link", "add", veth_a, "netns", ns_a, "type", "veth", "peer", "name", veth_b, "netns", ns_b)
            for ns, dev, addr in ((ns_a, veth_a, addr_a), (ns_b, veth_b, addr_b)):
                sh("ip", "-n", ns, "addr", "add", f"{addr}/30", "dev", dev)
                sh("ip", "-n", ns, "link", "set", dev, "up")
                sh("ip", "-n", ns, "link", "set", "lo", "up")
            common = ["--world-size", "2", "--local-ranks", "1", "--master-addr", addr_a, "--master-port", "29531"]
            env_b = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(WORKER_DIR), "GLOO_SOCKET_IFNAME": veth_b}
            followers.append(subprocess.Popen(["ip", "netns", "exec", ns_b, sys.executable, "-m", "harnessrl_worker", "--device", "cpu", "--threads", "1", *common, "--rank", "1"], stdin=subprocess.DEVNULL, cwd=WORKER_DIR, env=env_b))
            w = self.start(*common, "--rank", "0", prefix=["ip", "netns", "exec", ns_a], env={"GLOO_SOCKET_IFNAME": veth_a})
            two = self.session(w, "netns")
            one = self.session(self.start(), "local")
            self.assert_same(one, two)
            w.close()
            self.assertEqual(followers[0].wait(timeout=30), 0)
        finally:
            for p in followers:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            for w in self.workers:
                if w.proc.poll() is None:
                    w.proc.kill()
                    w.proc.wait()
            for ns in (ns_a, ns_b):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


if __name__ == "__main__":
    unittest.main()
