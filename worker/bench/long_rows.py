"""Long-row training benchmark (started by `npm run bench:long-rows`, src/bench/long-rows.ts; docs/worker.md).

One `forward_backward` step (the real op, through the worker's dispatch) on one packed row, per case, each case in
a fresh process so its peak RSS is its own, under a watchdog that kills it past --limit-mb resident or --timeout
seconds. The model has Qwen3's vocabulary (151,936, tied) and a tiny body, so the output projection weighs as it
does in a real Qwen3 while attention stays cheap enough for a 2-core machine.

Rows: `flat` — one path of N tokens whose last --completion tokens are trainable (one agent turn after a long
context); `tree` — a GRPO group: one --prompt-token prompt shared by --group completions of --completion tokens,
all completions trainable. Paths: `chunked` (defaults: attention recomputed in backward from 4096-token paths,
logits only at trainable tokens in recomputed chunks, the last layer only where those logits read), `unpruned`
(the same with --full-last-layer: the last layer at every position) and `current` (--long-row-tokens 0
--stored-logits: stored attention probabilities, logits at every token kept by autograd). `--layers N` sets the
model's depth (default 1; qwen3-tiny has 2): pruning removes most of the last layer, so its gain depends on depth.

  python3 worker/bench/long_rows.py run [--out FILE] [--limit-mb M] [--timeout S] [--layers N] [--cases flat:8192:current,...]
  python3 worker/bench/long_rows.py case KIND TOKENS PATH [--layers N]   (one case; prints one JSON line)
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

from bench_report import machine, write_json  # this directory (run as a script)

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.dirname(HERE)
VOCAB = 151_936
# One ~500-token completion per trainable stretch; a GRPO group of 4 after a 30k-token prompt (about what Claude
# Code's first prompt plus a few turns reaches).
COMPLETION = 512
GROUP = 4
TREE_PROMPT = 30_000
DEFAULT_CASES = [
    "flat:2048:current",
    "flat:2048:chunked",
    "flat:8192:current",
    "flat:8192:chunked",
    "flat:8192:unpruned",
    "flat:32768:chunked",
    "flat:32768:unpruned",
    "flat:65536:chunked",
    "tree:32048:chunked",
    "tree:32048:unpruned",
]


def model_config(layers: int = 1) -> Dict[str, Any]:
    return {
        "model_type": "qwen3",
        "vocab_size": VOCAB,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": layers,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "rope_theta": 1_000_000.0,
        "max_position_embeddings": 131_072,
        "tie_word_embeddings": True,
    }


def build_row(kind: str, tokens: int) -> Dict[str, List[int]]:
    """tokens, parent, positions, trainable for one row (DFS order)."""
    import random

    rng = random.Random(tokens)
    if kind == "flat":
        parent = list(range(-1, tokens - 1))
        positions = list(range(tokens))
        trainable = [0] * (tokens - COMPLETION) + [1] * COMPLETION
    elif kind == "tree":
        prompt = tokens - GROUP * COMPLETION
        parent = list(range(-1, prompt - 1))
        positions = list(range(prompt))
        trainable = [0] * prompt
        for _ in range(GROUP):
            start = len(parent)
            parent += [prompt - 1] + list(range(start, start + COMPLETION - 1))
            positions += list(range(prompt, prompt + COMPLETION))
            trainable += [1] * COMPLETION
    else:
        raise SystemExit(f"unknown row kind {kind!r}")
    return {"tokens": [rng.randrange(VOCAB) for _ in parent], "parent": parent, "positions": positions, "trainable": trainable}


def run_case(kind: str, tokens: int, path: str, threads: int, layers: int) -> Dict[str, Any]:
    sys.path.insert(0, WORKER)
    from harnessrl_worker.runtime import configure_thread_env

    configure_thread_env()
    import torch

    from harnessrl_worker.config import ModelConfig
    from harnessrl_worker.model import CausalLM, init_weights
    from harnessrl_worker.modeldir import LoadedModel
    from harnessrl_worker.server import handle
    from harnessrl_worker.state import WorkerSettings, WorkerState

    torch.set_num_threads(threads)
    cfg = ModelConfig(**model_config(layers)).validate()
    model = CausalLM(cfg)
    init_weights(model, 0)
    model.eval()
    settings = WorkerSettings(device=torch.device("cpu"), threads=threads)
    if path == "current":
        settings.long_row_tokens, settings.chunked_logits = 0, False
    settings.prune_last_layer = path == "chunked"
    state = WorkerState(settings)
    state.loaded = LoadedModel(model, cfg, None)
    row = build_row(kind, tokens)
    n = len(row["tokens"])
    frames = {
        "tokens": torch.tensor(row["tokens"], dtype=torch.int32),
        "parent": torch.tensor(row["parent"], dtype=torch.int32),
        "positions": torch.tensor(row["positions"], dtype=torch.int32),
        "trainable": torch.tensor(row["trainable"], dtype=torch.uint8),
        "loss_weights": torch.full((n,), 1.0 / max(1, sum(row["trainable"])), dtype=torch.float32),
        "old_logprobs": torch.full((n,), -12.0, dtype=torch.float32),
        "advantages": torch.ones(n, dtype=torch.float32),
    }
    baseline_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    body, _ = handle(state, {"id": 1, "op": "forward_backward", "args": {"row_lengths": [n]}}, frames)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    if not body.get("ok"):
        raise SystemExit(f"forward_backward failed: {body}")
    r = body["result"]
    return {
        "kind": kind,
        "tokens": n,
        "trainable": sum(row["trainable"]),
        "longest_path": max(row["positions"]) + 1,
        "path": path,
        "layers": layers,
        "status": "ok",
        "seconds": round(seconds, 2),
        "tokens_per_second": round(n / seconds, 1),
        # CPU time of the step (all threads): less sensitive than wall time to other load on a shared machine.
        "cpu_seconds": round(cpu, 2),
        "tokens_per_cpu_second": round(n / cpu, 1),
        "peak_rss_mb": r["peak_rss_mb"],
        "model_rss_mb": round(baseline_mb, 1),
        "long_rows": r["long_rows"],
        "loss": r["loss"],
    }



def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return float(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def supervise(case: str, limit_mb: float, timeout: float, threads: int, layers: int) -> Dict[str, Any]:
    kind, tokens, path = case.split(":")
    cmd = [sys.executable, os.path.abspath(__file__), "case", kind, tokens, path, "--threads", str(threads), "--layers", str(layers)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    seen = 0.0
    verdict: Optional[str] = None
    while proc.poll() is None:
        seen = max(seen, rss_mb(proc.pid))
        if seen > limit_mb:
            verdict = "exceeded_memory_limit"
        elif time.monotonic() - started > timeout:
            verdict = "timed_out"
        if verdict:
            proc.kill()
            break
        time.sleep(0.1)
    out, err = proc.communicate()
    base = {"kind": kind, "tokens": int(tokens), "path": path}
    if verdict:
        return {**base, "status": verdict, "seconds": round(time.monotonic() - started, 1), "peak_rss_mb": round(seen, 1), "limit_mb": limit_mb}
    if proc.returncode != 0:
        return {**base, "status": "failed", "error": err.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
    return json.loads(out.strip().splitlines()[-1])


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    one = sub.add_parser("case")
    one.add_argument("kind")
    one.add_argument("tokens", type=int)
    one.add_argument("path", choices=["chunked", "unpruned", "current"])
    one.add_argument("--threads", type=int, default=2)
    one.add_argument("--layers", type=int, default=1)
    allp = sub.add_parser("run")
    allp.add_argument("--out", default=None)
    allp.add_argument("--limit-mb", type=float, default=8192)
    allp.add_argument("--timeout", type=float, default=600)
    allp.add_argument("--threads", type=int, default=2)
    allp.add_argument("--layers", type=int, default=1)
    allp.add_argument("--cases", default=",".join(DEFAULT_CASES))
    opts = ap.parse_args(argv)
    if opts.cmd == "case":
        print(json.dumps(run_case(opts.kind, opts.tokens, opts.path, opts.threads, opts.layers)))
        return 0
    results: List[Dict[str, Any]] = []
    t0 = time.monotonic()
    for case in opts.cases.split(","):
        r = supervise(case, opts.limit_mb, opts.timeout, opts.threads, opts.layers)
        print(json.dumps(r), file=sys.stderr, flush=True)
        results.append(r)
        # Written after every case, so an interrupted run keeps what it measured.
        write_report(opts, results, time.monotonic() - t0)
    return 0


def write_report(opts: argparse.Namespace, results: List[Dict[str, Any]], seconds: float) -> None:
    report = {
        "bench": "long-rows",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "model": model_config(opts.layers),
        "rows": {"completion": COMPLETION, "group": GROUP, "flat_trainable": COMPLETION},
        "threads": opts.threads,
        "limit_mb": opts.limit_mb,
        "timeout_s": opts.timeout,
        "total_seconds": round(seconds, 1),
        "results": results,
    }
    write_json(opts.out, report)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
