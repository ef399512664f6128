"""The CPU-testable parts of scripts/gpu-check.sh: its op-parity module (worker/bench/gpu_check.py) run with the CPU
as the 'device' (autocast works on the CPU too), its refusal without CUDA, and its comparison failing on a wrong
gradient."""
from __future__ import annotations

import importlib.util
import io
import sys
import unittest
from contextlib import redirect_stderr
from pathlib import Path

import torch

PATH = Path(__file__).resolve().parent.parent / "bench" / "gpu_check.py"
spec = importlib.util.spec_from_file_location("gpu_check", PATH)
assert spec is not None and spec.loader is not None
gpu_check = importlib.util.module_from_spec(spec)
sys.modules["gpu_check"] = gpu_check
spec.loader.exec_module(gpu_check)


class GpuCheckTest(unittest.TestCase):
    def test_cpu_as_device_passes_fp32_exactly_and_bf16_autocast_within_its_tolerances(self) -> None:
        results = {r["case"]: r for r in gpu_check.run("cpu", "tiny-1m", ["fp32", "bf16-autocast"], rows=1, threads=1)}
        self.assertTrue(results["fp32"]["ok"], results["fp32"])
        # The same device and dtype: bit-identical to the reference.
        self.assertEqual(results["fp32"]["logprob_max_abs"], 0.0)
        self.assertEqual(results["fp32"]["grad_rel_l2"], 0.0)
        auto = results["bf16-autocast"]
        self.assertTrue(auto["ok"], auto)
        # bf16 products really ran (a no-op autocast would be exact).
        self.assertGreater(auto["logprob_max_abs"], 0.0)
        self.assertGreater(auto["grad_rel_l2"], 0.0)

    def test_a_wrong_gradient_fails_the_case(self) -> None:
        ref = {"logprobs": torch.zeros(4), "grad": torch.ones(8), "delta": torch.ones(8), "values": torch.zeros(4), "loss": 0.0, "seconds": 1.0, "cuda_peak_mb": None}
        bad = {**ref, "grad": torch.ones(8) * torch.tensor([1, 1, 1, 1, 1, 1, 1, -1.0])}
        r = gpu_check.compare("bf16-autocast", ref, bad)
        self.assertFalse(r["ok"])
        self.assertIn("grad_rel_l2", r["failed"])
        self.assertIn("grad_cos_min", r["failed"])

    def test_summary_table_lists_stages_and_cases_and_fails_when_a_stage_failed(self) -> None:
        import json
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            (d / "preflight.txt").write_text("torch 2.4.0, cuda 12.1, devices 1\n", "utf-8")
            (d / "results.tsv").write_text("build\tpass\t40\tdist/ built\nops\tpass\t30\tok\nranks\tskip\t0\tone GPU (1): nccl ranks need two\n", "utf-8")
            ref = {"logprobs": torch.zeros(2), "grad": torch.ones(3), "delta": torch.ones(3), "values": torch.zeros(2), "loss": 0.0, "seconds": 2.0, "cuda_peak_mb": None}
            (d / "ops.json").write_text(json.dumps([gpu_check.compare("fp32", ref, {**ref, "seconds": 0.5, "cuda_peak_mb": 120.0})]), "utf-8")
            text, ok = gpu_check.summary(d, 95)
            self.assertTrue(ok)
            self.assertIn("torch 2.4.0, cuda 12.1, devices 1; 95 s in all", text)
            self.assertRegex(text, r"ranks +skip .*nccl ranks need two")
            self.assertRegex(text, r"fp32 +ok .*0.50 s vs CPU 2.00 s, peak 120 MB")
            self.assertTrue(text.endswith("RESULT: pass"))
            with open(d / "results.tsv", "a", encoding="utf-8") as f:
                f.write("rl\tfail\t12\tsee rl.log\n")
            text, ok = gpu_check.summary(d)
            self.assertFalse(ok)
            self.assertTrue(text.endswith("RESULT: FAIL"))

    def test_the_script_refuses_clearly_without_cuda(self) -> None:
        import subprocess
        import tempfile

        if torch.cuda.is_available():
            self.skipTest("a CUDA device is visible")
        script = Path(__file__).resolve().parents[2] / "scripts" / "gpu-check.sh"
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=120, env={**__import__("os").environ, "GPU_CHECK_OUT": tmp, "HARNESSRL_PYTHON": sys.executable})
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("no CUDA device visible", r.stderr)
        self.assertIn("nothing was checked", r.stderr)

    @unittest.skipIf(torch.cuda.is_available(), "a CUDA device is visible")
    def test_without_cuda_it_refuses_clearly(self) -> None:
        err = io.StringIO()
        with redirect_stderr(err):
            code = gpu_check.main(["--device", "cuda"])
        self.assertEqual(code, 2)
        self.assertIn("no CUDA device", err.getvalue())


if __name__ == "__main__":
    unittest.main()
