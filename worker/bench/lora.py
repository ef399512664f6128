"""LoRA vs full fine-tuning, one training step at a time (docs/training.md, LoRA; results in docs/bench/lora.json).

Per case a fresh process builds a preset model (seeded, no directory), optionally attaches LoRA (rank 8, alpha 16, all
seven projections), and runs --steps × (forward_backward + optim_step) through the worker's real ops on one batch of
--rows flat rows of --tokens tokens (all but the first token trainable). It reports the trainable parameters, the
AdamW state it holds (bytes of exp_avg + exp_avg_sq + step), the process's peak RSS, and per-step wall and CPU time
(CPU time is the steadier figure on a shared machine).

  /usr/bin/python3 worker/bench/lora.py run [--out FILE] [--presets tiny-1m,tiny-10m] [--steps 3]
  /usr/bin/python3 worker/bench/lora.py case PRESET MODE   (MODE: full | lora; prints one JSON line)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.dirname(HERE)
REPO = os.path.dirname(WORKER)


def run_case(preset: str, mode: str, steps: int, rows: int, tokens: int) -> Dict[str, Any]:
    sys.path.insert(0, WORKER)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    from harnessrl_worker.lora import LoraConfig, LoraState, attach
    from harnessrl_worker.model import CausalLM, init_weights
    from harnessrl_worker.modeldir import LoadedModel
    from harnessrl_worker.presets import preset_config
    from harnessrl_worker.server import handle
    from harnessrl_worker.state import WorkerSettings, WorkerState
    from pathlib import Path

    cfg = preset_config(preset, 0, None)
    model = CausalLM(cfg)
    init_weights(model, 0)
    if mode == "lora":
        attach(model, LoraConfig(8, 16.0), 0)
    state = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
    state.loaded = LoadedModel(model, cfg, None, None, None if mode == "full" else LoraState(LoraConfig(8, 16.0), Path("/nonexistent"), ""))
    gen = torch.Generator().manual_seed(1)
    n = rows * tokens
    vocab = min(cfg.vocab_size, 256)
    frames = {
        "tokens": torch.randint(0, vocab, (n,), generator=gen, dtype=torch.int32),
        "parent": torch.tensor([i - 1 for _ in range(rows) for i in range(tokens)], dtype=torch.int32),
        "positions": torch.tensor([i for _ in range(rows) for i in range(tokens)], dtype=torch.int32),
        "trainable": torch.tensor([0 if i == 0 else 1 for _ in range(rows) for i in range(tokens)], dtype=torch.uint8),
        "loss_weights": torch.full((n,), 1.0 / n),
        "old_logprobs": torch.full((n,), -5.0),
        "advantages": torch.randn(n, generator=gen),
    }
    walls: List[float] = []
    cpus: List[float] = []
    for _ in range(steps):
        t0, c0 = time.perf_counter(), time.process_time()
        for op, args, fr in (("forward_backward", {"row_lengths": [tokens] * rows}, frames), ("optim_step", {"lr": 1e-3}, {})):
            body, _ = handle(state, {"id": 1, "op": op, "args": args}, fr)
            if not body["ok"]:
                raise RuntimeError(body)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    opt = state.extensions["optim"].optimizer
    opt_bytes = sum(v.numel() * v.element_size() for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor))
    return {
        "preset": preset,
        "mode": mode,
        "parameters": sum(p.numel() for p in model.parameters()),
        "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "optimizer_state_mb": round(opt_bytes / 2**20, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "step_wall_s": [round(w, 3) for w in walls],
        "step_cpu_s": [round(c, 3) for c in cpus],
        "rows": rows,
        "tokens": tokens,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", default=os.path.join(REPO, "docs", "bench", "lora.json"))
    r.add_argument("--presets", default="tiny-1m,tiny-10m")
    r.add_argument("--steps", type=int, default=3)
    r.add_argument("--rows", type=int, default=4)
    r.add_argument("--tokens", type=int, default=512)
    c = sub.add_parser("case")
    c.add_argument("preset")
    c.add_argument("mode", choices=("full", "lora"))
    c.add_argument("--steps", type=int, default=3)
    c.add_argument("--rows", type=int, default=4)
    c.add_argument("--tokens", type=int, default=512)
    a = p.parse_args()
    if a.cmd == "case":
        print(json.dumps(run_case(a.preset, a.mode, a.steps, a.rows, a.tokens)))
        return
    results = []
    for preset in a.presets.split(","):
        for mode in ("full", "lora"):
            cmd = [sys.executable, os.path.abspath(__file__), "case", preset, mode, "--steps", str(a.steps), "--rows", str(a.rows), "--tokens", str(a.tokens)]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, check=True)
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(results[-1]), flush=True)
    load = os.getloadavg()
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": platform.machine(), "cpus": os.cpu_count(), "load_average_at_end": [round(x, 1) for x in load], "results": results}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
