"""Data-parallel ranks on the CPU: one quickstart-sized RL step with 1 process vs 2 gloo ranks (`npm run bench:ranks`;
docs/worker.md#ranks).

The batch has the quickstart's shape: tiny-1m, 6 tasks × 6 samples as 6 tree rows (one GRPO group each: a shared
prompt of --prompt tokens and 6 completions of --completion tokens, completions trainable). Each layout runs, in its
own worker process(es) through the real protocol, `logprobs` (the reference scorer's op) and `forward_backward` +
`optim_step` (one policy update), --reps rounds after one warm-up round, the layouts interleaved within each round
(this machine is shared: load changes hit all layouts alike); the median wall time is reported.

Layouts: `1x1` (one process, 1 thread), `1x2` (one process, 2 threads), `2x1` (2 ranks, 1 thread each).

  python3 worker/bench/ranks.py [--reps 3] [--out FILE] [--layouts 1x1,1x2,2x1]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
WORKER = HERE.parent
sys.path.insert(0, str(WORKER))

import torch  # noqa: E402

from harnessrl_worker.protocol import encode_message, read_message  # noqa: E402
from harnessrl_worker.synthetic import policy_frames  # noqa: E402


class Client:
    def __init__(self, args: List[str]) -> None:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(WORKER)}
        self.proc = subprocess.Popen([sys.executable, "-m", "harnessrl_worker", "--device", "cpu", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=WORKER, env=env)

    def call(self, op: str, args: Dict[str, Any], frames: Optional[Dict[str, torch.Tensor]] = None, timeout: float = 900) -> Tuple[Dict[str, Any], Dict[str, torch.Tensor]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(encode_message({"id": 1, "op": op, "args": args}, frames))
        self.proc.stdin.flush()
        timer = threading.Timer(timeout, self.proc.kill)
        timer.start()
        try:
            msg = read_message(self.proc.stdout)  # type: ignore[arg-type]
        finally:
            timer.cancel()
        if msg is None or not msg.header.get("ok"):
            raise RuntimeError(f"{op}: {None if msg is None else msg.header}")
        return msg.header["result"], msg.frames

    def close(self) -> None:
        try:
            self.call("shutdown", {}, timeout=60)
        except (RuntimeError, OSError):
            pass
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def quickstart_batch(groups: int, samples: int, prompt: int, completion: int, seed: int = 0) -> Tuple[List[int], Dict[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    tokens: List[int] = []
    parent: List[int] = []
    positions: List[int] = []
    trainable: List[int] = []
    lengths: List[int] = []
    for g in range(groups):
        # Completion lengths vary within a group, as sampled replies do.
        sizes = [max(8, completion + int(torch.randint(-completion // 2, completion // 2 + 1, (1,), generator=gen))) for _ in range(samples)]
        n = prompt + sum(sizes)
        tokens += torch.randint(0, 256, (n,), generator=gen).tolist()
        parent += [-1] + list(range(prompt - 1))
        positions += list(range(prompt))
        start = prompt
        for size in sizes:
            parent += [prompt - 1] + [start + i for i in range(size - 1)]
            positions += list(range(prompt, prompt + size))
            start += size
        trainable += [0] * prompt + [1] * sum(sizes)
        lengths.append(n)
    return lengths, policy_frames(tokens, parent, positions, trainable, gen, old_logprobs=(0.0, 3.0))


def start(layout: str, tmp: Path) -> Tuple[Client, float]:
    ranks, threads = (int(x) for x in layout.split("x"))
    args = ["--threads", str(threads)] + (["--world-size", str(ranks)] if ranks > 1 else [])
    started = time.perf_counter()
    client = Client(args)
    client.call("init", {"preset": "tiny-1m", "seed": 0, "out": str(tmp / layout)})
    return client, time.perf_counter() - started


def one_round(client: Client, lengths: List[int], frames: Dict[str, torch.Tensor]) -> Tuple[float, float]:
    scoring = {k: frames[k] for k in ("tokens", "parent", "positions", "trainable")}
    t = time.perf_counter()
    client.call("logprobs", {"row_lengths": lengths, "entropy": False}, scoring)
    lp = time.perf_counter() - t
    t = time.perf_counter()
    client.call("forward_backward", {"row_lengths": lengths}, frames)
    client.call("optim_step", {"lr": 1e-4})
    return lp, time.perf_counter() - t


def measure_all(layouts: List[str], reps: int, lengths: List[int], frames: Dict[str, torch.Tensor], tmp: Path) -> List[Dict[str, Any]]:
    """All layouts' workers are started first (idle ones wait on stdin or a socket, using no CPU); then every round
    runs each layout once, so a change of the machine's load hits all layouts alike (this machine is shared)."""
    clients: Dict[str, Tuple[Client, float]] = {}
    times: Dict[str, Tuple[List[float], List[float]]] = {layout: ([], []) for layout in layouts}
    try:
        for layout in layouts:
            clients[layout] = start(layout, tmp)
        for rep in range(reps + 1):
            order = layouts if rep % 2 == 0 else list(reversed(layouts))
            for layout in order:
                lp, step = one_round(clients[layout][0], lengths, frames)
                if rep > 0:  # the first round is a warm-up
                    times[layout][0].append(lp)
                    times[layout][1].append(step)
            print(f"round {rep}: " + ", ".join(f"{l} {times[l][1][-1]:.2f} s" for l in layouts if times[l][1]), flush=True)
    finally:
        for client, _ in clients.values():
            client.close()
    out = []
    for layout in layouts:
        ranks, threads = (int(x) for x in layout.split("x"))
        lp_times, step_times = times[layout]
        out.append({"layout": layout, "ranks": ranks, "threads_per_rank": threads, "start_s": round(clients[layout][1], 2), "logprobs_s": round(statistics.median(lp_times), 3), "train_step_s": round(statistics.median(step_times), 3), "logprobs_all_s": [round(x, 3) for x in lp_times], "train_step_all_s": [round(x, 3) for x in step_times]})
    return out


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--layouts", default="1x1,1x2,2x1")
    parser.add_argument("--groups", type=int, default=6)
    parser.add_argument("--samples", type=int, default=6)
    parser.add_argument("--prompt", type=int, default=300)
    parser.add_argument("--completion", type=int, default=120)
    parser.add_argument("--out", default=None)
    opts = parser.parse_args(argv)
    lengths, frames = quickstart_batch(opts.groups, opts.samples, opts.prompt, opts.completion)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="harnessrl-bench-ranks-") as tmp:
        results = measure_all(opts.layouts.split(","), opts.reps, lengths, frames, Path(tmp))
    base = next((r for r in results if r["layout"] == "1x1"), None)
    if base is not None:
        for r in results:
            r["train_speedup_vs_1x1"] = round(base["train_step_s"] / r["train_step_s"], 2)
            r["logprobs_speedup_vs_1x1"] = round(base["logprobs_s"] / r["logprobs_s"], 2)
    load = os.getloadavg()
    report = {
        "bench": "ranks",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "loadavg_1_5_15_before": [round(x, 2) for x in load_before], "loadavg_1_5_15_after": [round(x, 2) for x in load], "python": platform.python_version(), "torch": torch.__version__},
        "batch": {"rows": len(lengths), "tokens": int(frames["tokens"].numel()), "trainable_tokens": int(frames["trainable"].sum()), "groups": opts.groups, "samples": opts.samples, "prompt": opts.prompt, "completion": opts.completion},
        "reps": opts.reps,
        "results": results,
    }
    if opts.out:
        Path(opts.out).parent.mkdir(parents=True, exist_ok=True)
        Path(opts.out).write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    print(json.dumps({k: report[k] for k in ("machine", "batch")}))
    for r in results:
        print(f"{r['layout']}: logprobs {r['logprobs_s']:.2f} s, train step {r['train_step_s']:.2f} s (x{r.get('train_speedup_vs_1x1', 1):.2f} vs 1x1), start {r['start_s']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
