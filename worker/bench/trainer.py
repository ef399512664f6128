"""Trainer throughput against bare torch on the same shapes (`npm run bench:trainer`; docs/worker.md, "Trainer against
bare torch"; results in docs/bench/trainer.json).

Per case (shape × threads) a fresh process builds one seeded preset model and a copy of it, then alternates, step by
step, two ways of training on the same rollouts:

- `ours`: `forward_backward` + `optim_step` through the worker's real op path (server.handle, the dispatch the
  protocol uses: frame checks, row validation, segment attention over packed rows, chunked logits at trainable
  tokens, the sft or pg loss with its statistics, gradient clipping, AdamW);
- `bare`: the same model class over the same rollouts as plain causal rows ([B, N] with a lower-triangular mask, every
  root-to-leaf path of a tree unrolled into a row of its own, as a plain loop without prefix sharing would train
  them), cross-entropy at the same trainable tokens (weighted like ours), clip_grad_norm_, torch.optim.AdamW.

Shapes (tiny-1m, byte tokenizer, unless said): `sft` — the quickstart's SFT micro-batch as src/train/batches.ts packs
it: one tree row, a 669-token system prompt shared by 13 demonstrations of 252 tokens (task 60, call 100 trainable,
tool result 77, answer 15 trainable): 3,945 tokens, 1,495 trainable (bare: 13 rows of 921); `sft-flat` — 23 flat
rows of 177 tokens, the last 53 trainable (no shared prompt: the per-path overhead alone); `rl` — an RL row: a
700-token trunk under 3 task prompts of 56 tokens, each with 6 samples of 120 tokens (call 94 trainable, tool result
20, answer 6 trainable), pg objective with the quickstart's loss (clip 0.2/0.28, TIS 2, KL 0.1 to reference
logprobs): 3,028 tokens, 1,800 trainable (bare: 18 rows of 876); `qwen3` — qwen3-tiny (Qwen3's 151,669-id
vocabulary, tied), 8 flat rows of 512 tokens, the last 128 trainable (sft).

Reported per path: median wall and CPU seconds per step, tokens/s (tokens the path computes: unique tokens for ours,
padded-row tokens for bare), trainable tokens/s, and ours/bare as a ratio of trainable tokens/s (> 1 = ours faster);
`ratio_best` compares the fastest step of each (the least disturbed by other load). The first step of each path is
a warm-up and is not counted; its NLL is reported for both (same weights, same tokens: they must agree). A matmul
calibration (4096×128 @ 128×512) gives the CPU's GFLOPS at the case's thread count, so a loaded machine shows in the
file.

  /usr/bin/python3 worker/bench/trainer.py run [--out FILE] [--shapes sft,rl,qwen3] [--threads 1,2] [--steps 5]
  /usr/bin/python3 worker/bench/trainer.py case SHAPE THREADS [--steps 5]   (prints one JSON line)
  /usr/bin/python3 worker/bench/trainer.py profile SHAPE [--path ours|bare] [--steps 3]   (cProfile, 1 thread)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Tuple

from bench_report import machine, write_json  # this directory (run as a script)

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.dirname(HERE)
REPO = os.path.dirname(WORKER)


@dataclass(frozen=True)
class Shape:
    preset: str
    objective: str  # "sft" | "pg"
    rows: int
    trunk: int  # tokens every path of a row shares (system prompt and tools)
    groups: int  # per row: task prompts after the trunk
    prefix: int  # tokens of a group's own prompt (shared by its branches)
    branches: int  # per group: sampled continuations
    pattern: Tuple[Tuple[int, int], ...]  # a branch: (tokens, trainable) stretches (a call, a tool result, ...)
    lr: float


# Layouts measured on the quickstart's own batches (2026-12-02 run, demos.sqlite and RL step 1 of records.sqlite,
# packed by src/train/batches.ts): an SFT micro-batch is one 3,947-token tree row (1,498 trainable, 14 segments, depth
# 921) whose demonstrations share the harness's system prompt; an RL micro-batch holds rows of ~4,000 tokens, each
# a ~700-token trunk under 3–4 task groups of 6 samples (~100 trainable tokens each: the call and the final answer).
SHAPES: Dict[str, Shape] = {
    "sft": Shape("tiny-1m", "sft", 1, 669, 13, 60, 1, ((100, 1), (77, 0), (15, 1)), 1e-2),
    # The same demonstrations as flat rows without a shared prompt (every path pays its own context).
    "sft-flat": Shape("tiny-1m", "sft", 23, 124, 1, 0, 1, ((53, 1),), 1e-2),
    "rl": Shape("tiny-1m", "pg", 1, 700, 3, 56, 6, ((94, 1), (20, 0), (6, 1)), 3e-3),
    "qwen3": Shape("qwen3-tiny", "sft", 8, 384, 1, 0, 1, ((128, 1),), 1e-3),
}
# The quickstart's RL loss (configs/quickstart.yaml).
PG_LOSS = {"clip_low": 0.2, "clip_high": 0.28, "tis_cap": 2.0, "kl_coef": 0.1}


@dataclass
class Path:
    row: int
    # Indices into the row of the path's tokens, root first.
    nodes: List[int]
    advantage: float


def build_batch(shape: Shape, vocab: int, seed: int) -> Dict[str, Any]:
    """The packed rows (DFS order, row-local parents) and every root-to-leaf path of them (what bare torch trains on).
    Token ids are random below 256 (every id has text in both vocabularies); advantages are ±N(0, 1) per path."""
    import random

    rng = random.Random(seed)
    top = min(vocab, 256)
    rows: List[Dict[str, List[int]]] = []
    paths: List[Path] = []
    for r in range(shape.rows):
        row: Dict[str, List[int]] = {"tokens": [], "parent": [], "positions": [], "trainable": []}

        def extend(parent: int, n: int, trainable: int) -> int:
            """Appends a chain of n tokens under `parent` (-1: root); returns the last token's index."""
            for _ in range(n):
                row["tokens"].append(rng.randrange(top))
                row["parent"].append(parent)
                row["positions"].append(0 if parent < 0 else row["positions"][parent] + 1)
                row["trainable"].append(trainable)
                parent = len(row["tokens"]) - 1
            return parent

        trunk_end = extend(-1, shape.trunk, 0)
        trunk = list(range(shape.trunk))
        for _ in range(shape.groups):
            start = len(row["tokens"])
            prefix_end = extend(trunk_end, shape.prefix, 0)
            prefix = list(range(start, prefix_end + 1)) if shape.prefix else []
            for _ in range(shape.branches):
                first = len(row["tokens"])
                last = prefix_end
                for n, trainable in shape.pattern:
                    last = extend(last, n, trainable)
                adv = rng.gauss(0.0, 1.0) if shape.objective == "pg" else 1.0
                paths.append(Path(r, trunk + prefix + list(range(first, last + 1)), adv))
        rows.append(row)
    return {"rows": rows, "paths": paths}


def packed_frames(shape: Shape, batch: Dict[str, Any]) -> Tuple[Dict[str, Any], List[int], Dict[str, Any]]:
    """The wire frames of ours, and the per-token advantages of each row (bare torch reads them per path)."""
    import torch

    rows = batch["rows"]
    adv_rows: List[List[float]] = []
    for r, row in enumerate(rows):
        adv = [0.0] * len(row["tokens"])
        for p in batch["paths"]:
            if p.row == r:
                for i in p.nodes:
                    if row["trainable"][i]:
                        adv[i] = p.advantage
        adv_rows.append(adv)
    cat = lambda key: [x for row in rows for x in row[key]]  # noqa: E731
    n = len(cat("tokens"))
    n_train = sum(cat("trainable"))
    frames: Dict[str, Any] = {
        "tokens": torch.tensor(cat("tokens"), dtype=torch.int32),
        "parent": torch.tensor(cat("parent"), dtype=torch.int32),
        "positions": torch.tensor(cat("positions"), dtype=torch.int32),
        "trainable": torch.tensor(cat("trainable"), dtype=torch.uint8),
        # Token mean over the micro-batch's trainable tokens, as src/train/micro-batches.ts setTokenMeanWeights.
        "loss_weights": torch.full((n,), 1.0 / n_train, dtype=torch.float32),
    }
    if shape.objective == "pg":
        frames["advantages"] = torch.tensor([a for adv in adv_rows for a in adv], dtype=torch.float32)
        # Engine and reference logprobs: filled from the policy once it exists (setup).
        frames["old_logprobs"] = torch.zeros(n, dtype=torch.float32)
        frames["ref_logprobs"] = torch.zeros(n, dtype=torch.float32)
    return frames, [len(row["tokens"]) for row in rows], {"trainable": n_train}


def matmul_gflops(threads: int) -> float:
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(4096, 128), torch.randn(128, 512)
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(10):
            torch.matmul(a, b)
        best = min(best, (time.perf_counter() - t0) / 10)
    return round(2 * 4096 * 128 * 512 / best / 1e9, 1)


def setup(shape_name: str, threads: int) -> Dict[str, Any]:
    sys.path.insert(0, WORKER)
    from harnessrl_worker.runtime import configure_thread_env

    configure_thread_env()
    import copy

    import torch

    from harnessrl_worker.model import CausalLM, init_weights
    from harnessrl_worker.modeldir import LoadedModel
    from harnessrl_worker.presets import preset_config
    from harnessrl_worker.state import WorkerSettings, WorkerState

    torch.set_num_threads(threads)
    shape = SHAPES[shape_name]
    cfg = preset_config(shape.preset, 0, None)
    model = CausalLM(cfg)
    init_weights(model, 0)
    model.eval()
    bare_model = copy.deepcopy(model)
    state = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=threads))
    state.loaded = LoadedModel(model, cfg, None)
    batch = build_batch(shape, cfg.vocab_size, 1)
    frames, lengths, extra = packed_frames(shape, batch)
    if shape.objective == "pg":
        # Engine logprobs within TIS range of the policy's, reference logprobs a little further (KL term non-zero).
        from harnessrl_worker.server import handle

        body, out = handle(state, {"id": 0, "op": "logprobs", "args": {"row_lengths": lengths}}, {k: frames[k] for k in ("tokens", "parent", "positions")})
        if not body["ok"]:
            raise SystemExit(f"logprobs failed: {body}")
        lp = out["logprobs"]
        noise = torch.randn(lp.shape, generator=torch.Generator().manual_seed(3))
        frames["old_logprobs"] = (lp + 0.01 * noise).float()
        frames["ref_logprobs"] = (lp + 0.1 * noise).float()
    return {"shape": shape, "cfg": cfg, "state": state, "bare_model": bare_model, "batch": batch, "frames": frames, "lengths": lengths, "extra": extra}


def ours_step(ctx: Dict[str, Any]) -> float:
    from harnessrl_worker.server import handle

    shape: Shape = ctx["shape"]
    args: Dict[str, Any] = {"row_lengths": ctx["lengths"], "objective": shape.objective}
    if shape.objective == "pg":
        args["loss"] = PG_LOSS
    body, _ = handle(ctx["state"], {"id": 1, "op": "forward_backward", "args": args}, ctx["frames"])
    if not body["ok"]:
        raise SystemExit(f"forward_backward failed: {body}")
    step, _ = handle(ctx["state"], {"id": 2, "op": "optim_step", "args": {"lr": shape.lr, "max_grad_norm": 1.0}}, {})
    if not step["ok"]:
        raise SystemExit(f"optim_step failed: {step}")
    return float(body["result"]["nll_mean"])


def bare_batch(ctx: Dict[str, Any]) -> Dict[str, Any]:
    """Every root-to-leaf path as one causal row, padded to the longest (equal here), with the same trainable tokens,
    weights and advantages. Tokens shared by several paths are trained once per path by ours as well (trainable tokens
    are never shared: each sits on one branch)."""
    import torch

    batch = ctx["batch"]
    rows, paths = batch["rows"], batch["paths"]
    width = max(len(p.nodes) for p in paths)
    ids = torch.zeros(len(paths), width, dtype=torch.long)
    train = torch.zeros(len(paths), width, dtype=torch.bool)
    adv = torch.zeros(len(paths), width)
    for b, p in enumerate(paths):
        row = rows[p.row]
        ids[b, : len(p.nodes)] = torch.tensor([row["tokens"][i] for i in p.nodes])
        train[b, : len(p.nodes)] = torch.tensor([bool(row["trainable"][i]) for i in p.nodes])
        adv[b] = p.advantage
    pos = torch.arange(width).expand(len(paths), width).contiguous()
    causal = torch.ones(width, width, dtype=torch.bool).tril_().expand(len(paths), width, width)
    # Logits at position t predict token t + 1: select the positions before each trainable token.
    sel = torch.zeros_like(train)
    sel[:, :-1] = train[:, 1:]
    n_train = ctx["extra"]["trainable"]
    return {"ids": ids, "pos": pos, "mask": causal, "sel": sel, "targets": ids[train], "weights": adv[train] / n_train, "tokens": len(paths) * width}


def bare_step(ctx: Dict[str, Any]) -> float:
    import torch
    import torch.nn.functional as F
    from torch.nn.utils.clip_grad import clip_grad_norm_

    model = ctx["bare_model"]
    batch = ctx["bare"]
    if "opt" not in ctx:
        ctx["opt"] = torch.optim.AdamW(model.parameters(), lr=ctx["shape"].lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    opt = ctx["opt"]
    model.train()
    hidden = model.hidden_states(batch["ids"], batch["pos"], batch["mask"])
    logits = model.logits(hidden[batch["sel"]])
    nll = F.cross_entropy(logits, batch["targets"], reduction="none")
    (nll * batch["weights"]).sum().backward()
    clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    model.eval()
    return float(nll.detach().mean())


def timed(fn: Callable[[], float]) -> Tuple[float, float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    nll = fn()
    return time.perf_counter() - t0, time.process_time() - c0, nll


def run_case(shape_name: str, threads: int, steps: int) -> Dict[str, Any]:
    import torch

    ctx = setup(shape_name, threads)
    ctx["bare"] = bare_batch(ctx)
    gflops = matmul_gflops(threads)
    torch.set_num_threads(threads)
    paths = {"ours": lambda: ours_step(ctx), "bare": lambda: bare_step(ctx)}
    walls: Dict[str, List[float]] = {k: [] for k in paths}
    cpus: Dict[str, List[float]] = {k: [] for k in paths}
    first_nll: Dict[str, float] = {}
    for name, fn in paths.items():
        first_nll[name] = timed(fn)[2]  # warm-up (allocator, first-touch), and the NLL of the same weights
    # Alternating steps: load that comes and goes hits both paths alike.
    for i in range(steps):
        for name in (("ours", "bare") if i % 2 == 0 else ("bare", "ours")):
            w, c, _ = timed(paths[name])
            walls[name].append(w)
            cpus[name].append(c)
    shape: Shape = ctx["shape"]
    n_train = ctx["extra"]["trainable"]
    tokens = {"ours": int(ctx["frames"]["tokens"].numel()), "bare": int(ctx["bare"]["tokens"])}
    out: Dict[str, Any] = {
        "shape": shape_name,
        "preset": shape.preset,
        "objective": shape.objective,
        "threads": threads,
        "rows": shape.rows,
        "paths": len(ctx["batch"]["paths"]),
        "trainable_tokens": n_train,
        "matmul_gflops": gflops,
        "first_step_nll": {k: round(v, 5) for k, v in first_nll.items()},
        "loadavg": [round(x, 1) for x in os.getloadavg()],
    }
    for name in paths:
        wall = statistics.median(walls[name])
        cpu = statistics.median(cpus[name])
        out[name] = {
            "tokens": tokens[name],
            "step_wall_s": round(wall, 3),
            "best_step_wall_s": round(min(walls[name]), 3),
            "step_cpu_s": round(cpu, 3),
            "tokens_per_s": round(tokens[name] / wall, 1),
            "trainable_tokens_per_s": round(n_train / wall, 1),
            "trainable_tokens_per_cpu_s": round(n_train / cpu, 1),
            "walls": [round(w, 3) for w in walls[name]],
        }
    out["ratio_trainable_tokens_per_s"] = round(out["ours"]["trainable_tokens_per_s"] / out["bare"]["trainable_tokens_per_s"], 3)
    out["ratio_per_cpu_s"] = round(out["ours"]["trainable_tokens_per_cpu_s"] / out["bare"]["trainable_tokens_per_cpu_s"], 3)
    # Best step against best step: the least disturbed by other load on a shared machine.
    out["ratio_best"] = round(out["bare"]["best_step_wall_s"] / out["ours"]["best_step_wall_s"], 3)
    return out


def profile(shape_name: str, path: str, steps: int) -> None:
    import cProfile
    import pstats

    ctx = setup(shape_name, 1)
    ctx["bare"] = bare_batch(ctx)
    fn = (lambda: ours_step(ctx)) if path == "ours" else (lambda: bare_step(ctx))
    fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        fn()
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)



def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    one = sub.add_parser("case")
    one.add_argument("shape", choices=sorted(SHAPES))
    one.add_argument("threads", type=int)
    one.add_argument("--steps", type=int, default=5)
    prof = sub.add_parser("profile")
    prof.add_argument("shape", choices=sorted(SHAPES))
    prof.add_argument("--path", choices=("ours", "bare"), default="ours")
    prof.add_argument("--steps", type=int, default=3)
    allp = sub.add_parser("run")
    allp.add_argument("--out", default=None)
    allp.add_argument("--shapes", default="sft,sft-flat,rl,qwen3")
    allp.add_argument("--threads", default="1,2")
    allp.add_argument("--steps", type=int, default=5)
    allp.add_argument("--timeout", type=float, default=900)
    opts = ap.parse_args(argv)
    if opts.cmd == "case":
        print(json.dumps(run_case(opts.shape, opts.threads, opts.steps)))
        return 0
    if opts.cmd == "profile":
        profile(opts.shape, opts.path, opts.steps)
        return 0
    results: List[Dict[str, Any]] = []
    started = time.monotonic()
    load_at_start = [round(x, 1) for x in os.getloadavg()]
    for shape in opts.shapes.split(","):
        for threads in opts.threads.split(","):
            cmd = [sys.executable, os.path.abspath(__file__), "case", shape, threads, "--steps", str(opts.steps)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=opts.timeout)
            if proc.returncode != 0:
                raise SystemExit(f"case {shape} {threads} failed:\n{proc.stderr}")
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{shape} threads={threads}: ours {r['ours']['step_wall_s']} s/step, bare {r['bare']['step_wall_s']} s/step, "
                  f"trainable tokens/s ours/bare {r['ratio_trainable_tokens_per_s']} (per CPU-s {r['ratio_per_cpu_s']}, best step {r['ratio_best']}); load {r['loadavg']}", file=sys.stderr, flush=True)
            results.append(r)
            write_report(opts, results, load_at_start, time.monotonic() - started)
    return 0


def write_report(opts: argparse.Namespace, results: List[Dict[str, Any]], load_at_start: List[float], seconds: float) -> None:
    report = {
        "bench": "trainer",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(load_at_start),
        "shapes": {k: vars(v) for k, v in SHAPES.items()},
        "steps": opts.steps,
        "total_seconds": round(seconds, 1),
        "results": results,
    }
    write_json(opts.out, report)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
