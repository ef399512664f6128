"""The worker's ops on an accelerator against the CPU in float32 (scripts/gpu-check.sh runs this; docs/worker.md).

Each case runs the same session through the worker's real dispatch (`server.handle`): init a preset, `logprobs` on a
tree-packed batch, `forward_backward` (policy gradient with entropy bonus), `optim_step`, the critic's values and
step, and compares every output with the CPU float32 reference:

  fp32          --device weights float32, no autocast: must match the CPU to float32 rounding
  bf16-autocast float32 master weights, ops under torch.autocast(bfloat16): the recommended training precision
  bf16          weights loaded as bfloat16 (pure bf16): the memory-saving option, coarsest

Tolerances (max |Δ| on logprobs; relative L2 error and cosine of the gradient; relative change of the weights after
one AdamW step) are in TOLERANCES; a case fails when any is exceeded. Prints one JSON object per case on stdout
(`--out FILE` writes the list too). `--device cpu` runs the same comparisons on the CPU (autocast on the CPU is
supported by torch): that is how this file is tested on machines without a GPU (worker/tests/test_gpu_check.py).

  python3 worker/bench/gpu_check.py [--device cuda] [--preset tiny-1m] [--cases fp32,bf16-autocast,bf16] [--out F]
  python3 worker/bench/gpu_check.py summary DIR [--total-s N]   (the script's closing table)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import torch  # noqa: E402

from harnessrl_worker.precision import parse_autocast  # noqa: E402
from harnessrl_worker.server import handle  # noqa: E402
from harnessrl_worker.state import WorkerSettings, WorkerState  # noqa: E402
from harnessrl_worker.synthetic import policy_frames  # noqa: E402

# name → (weights dtype for load, autocast) ; tolerances per case: logprob max |Δ|, gradient relative L2 error,
# gradient cosine ≥, next-step weight change relative error.
CASES: Dict[str, Tuple[str, Optional[str]]] = {"fp32": ("float32", None), "bf16-autocast": ("float32", "bf16"), "bf16": ("bfloat16", None)}
TOLERANCES: Dict[str, Dict[str, float]] = {
    "fp32": {"logprob_max_abs": 1e-3, "grad_rel_l2": 1e-3, "grad_cos_min": 0.99999, "step_rel": 1e-2},
    "bf16-autocast": {"logprob_max_abs": 0.05, "grad_rel_l2": 0.05, "grad_cos_min": 0.998, "step_rel": 0.2},
    "bf16": {"logprob_max_abs": 0.25, "grad_rel_l2": 0.25, "grad_cos_min": 0.95, "step_rel": 0.6},
}


def call(state: WorkerState, op: str, args: Dict[str, Any], frames: Optional[Dict[str, torch.Tensor]] = None) -> Tuple[Dict[str, Any], Dict[str, torch.Tensor]]:
    body, out = handle(state, {"id": 1, "op": op, "args": args}, frames or {})
    if not body.get("ok"):
        raise RuntimeError(f"{op} failed: {body.get('error')}")
    return body["result"], out


def batch(seed: int = 1, rows: int = 6, prompt: int = 48, completion: int = 40) -> Tuple[List[int], Dict[str, torch.Tensor]]:
    """GRPO-shaped tree rows: each a prompt shared by two completions; completions trainable."""
    gen = torch.Generator().manual_seed(seed)
    tokens: List[int] = []
    parent: List[int] = []
    positions: List[int] = []
    trainable: List[int] = []
    lengths: List[int] = []
    for _ in range(rows):
        n = prompt + 2 * completion
        tokens += torch.randint(0, 256, (n,), generator=gen).tolist()
        parent += [-1] + list(range(prompt - 1))
        positions += list(range(prompt))
        for b in range(2):
            start = prompt + b * completion
            parent += [prompt - 1] + [start + i for i in range(completion - 1)]
            positions += list(range(prompt, prompt + completion))
        trainable += [0] * prompt + [1] * (2 * completion)
        lengths.append(n)
    return lengths, policy_frames(tokens, parent, positions, trainable, gen)


def session(device: str, dtype: str, autocast: Optional[str], preset: str, workdir: Path, rows: int = 6) -> Dict[str, Any]:
    state = WorkerState(WorkerSettings(device=torch.device(device), threads=1, autocast=parse_autocast(autocast)))
    base = workdir / "base"
    if not (base / "config.json").exists():
        # The initial weights come from one seeded CPU init: every case starts from the same bits.
        init_state = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
        call(init_state, "init", {"preset": preset, "seed": 7, "out": str(base)})
    call(state, "load", {"dir": str(base), "dtype": dtype})
    lengths, frames = batch(rows=rows)
    scoring = {k: frames[k] for k in ("tokens", "parent", "positions")}
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    started = time.perf_counter()
    _, lp = call(state, "logprobs", {"row_lengths": lengths}, scoring)
    fb, _ = call(state, "forward_backward", {"row_lengths": lengths, "loss": {"entropy_coef": 0.01}}, frames)
    model = state.require_model().model
    grad = torch.cat([p.grad.detach().float().reshape(-1).cpu() for p in model.parameters() if p.grad is not None])
    before = torch.cat([p.detach().float().reshape(-1).cpu() for p in model.parameters()])
    call(state, "optim_step", {"lr": 1e-3, "eps": 1e-6})
    after = torch.cat([p.detach().float().reshape(-1).cpu() for p in model.parameters()])
    call(state, "critic_init", {})
    returns = torch.linspace(-1, 1, frames["tokens"].numel())
    call(state, "critic_forward_backward", {"row_lengths": lengths}, {**scoring, "trainable": frames["trainable"], "returns": returns, "loss_weights": frames["loss_weights"]})
    call(state, "critic_optim_step", {"lr": 1e-3})
    _, values = call(state, "critic_values", {"row_lengths": lengths}, scoring)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return {
        "logprobs": lp["logprobs"],
        "grad": grad,
        "delta": after - before,
        "values": values["values"],
        "loss": fb["loss"],
        "seconds": time.perf_counter() - started,
        "cuda_peak_mb": fb.get("cuda_peak_mb"),
    }


def compare(name: str, ref: Dict[str, Any], got: Dict[str, Any]) -> Dict[str, Any]:
    tol = TOLERANCES[name]
    grad_rel = float((got["grad"] - ref["grad"]).norm() / ref["grad"].norm().clamp_min(1e-30))
    grad_cos = float(torch.nn.functional.cosine_similarity(got["grad"], ref["grad"], dim=0))
    step_rel = float((got["delta"] - ref["delta"]).norm() / ref["delta"].norm().clamp_min(1e-30))
    lp_max = float((got["logprobs"] - ref["logprobs"]).abs().max())
    values_max = float((got["values"] - ref["values"]).abs().max())
    checks = {
        "logprob_max_abs": lp_max <= tol["logprob_max_abs"],
        "grad_rel_l2": grad_rel <= tol["grad_rel_l2"],
        "grad_cos_min": grad_cos >= tol["grad_cos_min"],
        "step_rel": step_rel <= tol["step_rel"],
        # The critic's values after one step, held to the logprobs' tolerance.
        "values_max_abs": values_max <= tol["logprob_max_abs"],
    }
    return {
        "case": name,
        "ok": all(checks.values()),
        "failed": [k for k, v in checks.items() if not v],
        "logprob_max_abs": lp_max,
        "grad_rel_l2": grad_rel,
        "grad_cos": grad_cos,
        "step_rel": step_rel,
        "values_max_abs": values_max,
        "loss": got["loss"],
        "loss_ref": ref["loss"],
        "seconds": round(got["seconds"], 3),
        "seconds_cpu_fp32": round(ref["seconds"], 3),
        "cuda_peak_mb": got["cuda_peak_mb"],
        "tolerances": tol,
    }


def run(device: str, preset: str, cases: List[str], rows: int = 6, threads: Optional[int] = None) -> List[Dict[str, Any]]:
    torch.set_num_threads(threads or max(1, min(4, os.cpu_count() or 1)))
    with tempfile.TemporaryDirectory(prefix="harnessrl-gpu-check-") as tmp:
        work = Path(tmp)
        ref = session("cpu", "float32", None, preset, work, rows)
        out = []
        for name in cases:
            dtype, ac = CASES[name]
            try:
                out.append(compare(name, ref, session(device, dtype, ac, preset, work, rows)))
            except Exception as e:  # noqa: BLE001 - one broken case must not hide the others
                out.append({"case": name, "ok": False, "failed": ["error"], "error": f"{type(e).__name__}: {e}"})
        return out


def summary(out_dir: Path, total_s: Optional[int] = None) -> Tuple[str, bool]:
    """The one table scripts/gpu-check.sh ends with: its stages (results.tsv: stage, status, seconds, detail) and the
    ops cases (ops.json). Returns the text and whether nothing failed."""
    lines: List[str] = []
    pre = out_dir / "preflight.txt"
    head = pre.read_text("utf-8").splitlines()[0] if pre.exists() and pre.read_text("utf-8").strip() else "?"
    lines.append(f"gpu-check summary ({head}{'' if total_s is None else f'; {total_s} s in all'})")
    lines.append(f"{'stage':<8} {'status':<6} {'s':>5}  detail")
    ok = True
    stages = (out_dir / "results.tsv").read_text("utf-8").splitlines() if (out_dir / "results.tsv").exists() else []
    for row in stages:
        stage, status, seconds, detail = (row.split("\t") + ["", "", "", ""])[:4]
        ok = ok and status != "fail"
        lines.append(f"{stage:<8} {status:<6} {seconds:>5}  {detail}")
        if stage == "ops" and (out_dir / "ops.json").exists():
            for r in json.loads((out_dir / "ops.json").read_text("utf-8")):
                if "error" in r:
                    lines.append(f"  {r['case']:<14} FAIL {r['error']}")
                    continue
                peak = "" if r.get("cuda_peak_mb") is None else f", peak {r['cuda_peak_mb']:.0f} MB"
                lines.append(
                    f"  {r['case']:<14} {'ok  ' if r['ok'] else 'FAIL'} logprob {r['logprob_max_abs']:.1e} grad {r['grad_rel_l2']:.1e} (cos {r['grad_cos']:.6f}) "
                    f"step {r['step_rel']:.1e} values {r['values_max_abs']:.1e}; {r['seconds']:.2f} s vs CPU {r['seconds_cpu_fp32']:.2f} s{peak}"
                    + ("" if r["ok"] else f"  [over: {', '.join(r['failed'])}]")
                )
    if not stages:
        ok = False
        lines.append("(no stage ran)")
    lines.append("RESULT: " + ("pass" if ok else "FAIL"))
    return "\n".join(lines), ok


def main(argv: List[str]) -> int:
    if argv[:1] == ["summary"]:
        sp = argparse.ArgumentParser(prog="gpu_check.py summary")
        sp.add_argument("dir")
        sp.add_argument("--total-s", type=int, default=None)
        so = sp.parse_args(argv[1:])
        text, ok = summary(Path(so.dir), so.total_s)
        print(text)
        return 0 if ok else 1
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--preset", default="tiny-1m")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", default=None)
    parser.add_argument("--rows", type=int, default=6, help="tree rows in the batch (each 48 prompt + 2 × 40 completion tokens)")
    opts = parser.parse_args(argv)
    if opts.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"gpu_check: no CUDA device visible to torch {torch.__version__} ({sys.executable}); nothing was checked", file=sys.stderr)
        return 2
    cases = [c for c in opts.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        print(f"gpu_check: unknown case(s) {', '.join(unknown)} (known: {', '.join(CASES)})", file=sys.stderr)
        return 2
    results = run(opts.device, opts.preset, cases, opts.rows)
    for r in results:
        print(json.dumps({"device": opts.device, "torch": torch.__version__, **r}))
    if opts.out:
        Path(opts.out).write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
