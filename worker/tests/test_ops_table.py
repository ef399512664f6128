"""The op table (harnessrl_worker/ops.json) against the worker: every op handled, the arguments each handler reads are
exactly those the table declares (read statically from the handlers and the helpers they pass `args` to), and a session
that calls every op gets results and frames the table lists. The TypeScript client and docs/worker.md are checked
against the same table by test/trainer/worker-ops.test.ts."""
from __future__ import annotations

import ast
import dataclasses
import tempfile
import unittest
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

import torch

from harnessrl_worker.losses import PGLossConfig
from harnessrl_worker.ops import OPS, TABLE
from harnessrl_worker.ops.registry import op
from harnessrl_worker.server import handle
from harnessrl_worker.state import WorkerSettings, WorkerState

OPS_DIR = Path(__file__).resolve().parent.parent / "harnessrl_worker" / "ops"
# The table type each Args getter reads (args.raw.get reads structured values: object or json).
GETTERS = {"req_str": "string", "opt_str": "string", "req_int": "int", "opt_int": "int", "opt_float": "number", "opt_bool": "bool", "int_list": "int[]"}
RAW = "raw"

Functions = Dict[str, Dict[str, ast.FunctionDef]]


def op_name(fn: ast.FunctionDef) -> Optional[str]:
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "op" and d.args and isinstance(d.args[0], ast.Constant):
            return str(d.args[0].value)
    return None


def parse_ops_package() -> Tuple[Functions, Dict[str, Tuple[str, ast.FunctionDef]]]:
    """Module → its functions, and op name → (module, handler)."""
    functions: Functions = {}
    handlers: Dict[str, Tuple[str, ast.FunctionDef]] = {}
    for path in sorted(OPS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        functions[path.stem] = defs
        for fn in defs.values():
            if (name := op_name(fn)) is not None:
                handlers[name] = (path.stem, fn)
    return functions, handlers


def arg_reads(functions: Functions, module: str, fn: ast.FunctionDef, var: str, seen: Set[Tuple[str, str]]) -> Dict[str, Set[str]]:
    """The argument names `fn` reads through its parameter `var` (an Args), each with the getters that read it,
    following calls that pass `var` on."""
    reads: Dict[str, Set[str]] = {}
    if (module, fn.name) in seen:
        return reads
    seen.add((module, fn.name))

    def add(key: str, how: str) -> None:
        reads.setdefault(key, set()).add(how)

    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        first = node.args[0] if node.args else None
        key = str(first.value) if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == var and f.attr in GETTERS and key:
            add(key, f.attr)
        elif isinstance(f, ast.Attribute) and f.attr == "get" and isinstance(f.value, ast.Attribute) and f.value.attr == "raw" and isinstance(f.value.value, ast.Name) and f.value.value.id == var and key:
            add(key, RAW)
        elif isinstance(f, ast.Name):
            passed = [i for i, a in enumerate(node.args) if isinstance(a, ast.Name) and a.id == var]
            if not passed:
                continue
            # A helper in the same module, else the one module of the package that defines it.
            owner = module if f.id in functions[module] else next((m for m, defs in functions.items() if f.id in defs), None)
            if owner is None:
                continue
            helper = functions[owner][f.id]
            for i in passed:
                if i < len(helper.args.args):
                    for k, hows in arg_reads(functions, owner, helper, helper.args.args[i].arg, seen).items():
                        reads.setdefault(k, set()).update(hows)
    for node in ast.walk(fn):
        # args.raw["x"] reads count too.
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "raw" and isinstance(node.value.value, ast.Name) and node.value.value.id == var:
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                add(node.slice.value, RAW)
    return reads


class OpsTableTest(unittest.TestCase):
    def test_every_table_op_is_handled_and_every_handler_is_in_the_table(self) -> None:
        self.assertEqual(sorted(OPS), sorted(TABLE))
        _, handlers = parse_ops_package()
        self.assertEqual(sorted(handlers), sorted(TABLE))
        with self.assertRaisesRegex(RuntimeError, "not in ops.json"):
            op("no_such_op")

    def test_each_handler_reads_exactly_the_arguments_the_table_declares_with_their_types(self) -> None:
        functions, handlers = parse_ops_package()
        for name, (module, fn) in sorted(handlers.items()):
            var = fn.args.args[1].arg  # (state, args, frames)
            reads = arg_reads(functions, module, fn, var, set())
            declared = TABLE[name]["args"]
            with self.subTest(op=name):
                self.assertEqual(sorted(reads), sorted(declared))
                for key, hows in reads.items():
                    read_as = {("object", "json") if how == RAW else (GETTERS[how],) for how in hows}
                    self.assertTrue(all(declared[key]["type"] in types for types in read_as), f"{name}.{key}: table says {declared[key]['type']}, read as {sorted(hows)}")

    def test_loss_fields_are_the_loss_config(self) -> None:
        self.assertEqual(sorted(TABLE["forward_backward"]["args"]["loss"]["fields"]), sorted(f.name for f in dataclasses.fields(PGLossConfig)))

    def test_undeclared_arguments_and_frames_are_refused(self) -> None:
        state = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
        body, _ = handle(state, {"id": 1, "op": "hello", "args": {"verbose": True}}, {})
        self.assertEqual(body["error"]["code"], "bad_request")
        self.assertIn("'verbose'", body["error"]["message"])
        body, _ = handle(state, {"id": 2, "op": "zero_grad", "args": {}}, {"tokens": torch.zeros(1, dtype=torch.int32)})
        self.assertEqual(body["error"]["code"], "bad_request")
        self.assertIn("'tokens'", body["error"]["message"])

    def test_a_session_calling_every_op_gets_the_results_and_frames_the_table_lists(self) -> None:
        state = WorkerState(WorkerSettings(device=torch.device("cpu"), threads=1))
        called: Set[str] = set()
        n = 6
        rows = {"tokens": torch.tensor([257, 1, 2, 3, 4, 5], dtype=torch.int32), "parent": torch.arange(-1, n - 1, dtype=torch.int32), "positions": torch.arange(n, dtype=torch.int32)}
        trainable = torch.tensor([0, 1, 1, 1, 1, 1], dtype=torch.uint8)
        masks = {"action_mask": torch.tensor([0, 1, 1, 0, 0, 0], dtype=torch.uint8), "args_mask": torch.tensor([0, 0, 0, 1, 1, 1], dtype=torch.uint8)}

        def call(name: str, args: Dict[str, Any], frames: Optional[Dict[str, torch.Tensor]] = None) -> Tuple[Dict[str, Any], Dict[str, torch.Tensor]]:
            body, out = handle(state, {"id": len(called), "op": name, "args": args}, frames or {})
            self.assertTrue(body["ok"], body)
            spec = TABLE[name]
            result = set(body["result"])
            self.assertLessEqual(set(spec["result"]), result, name)
            self.assertLessEqual(result, set(spec["result"]) | set(spec["result_optional"]) | {"elapsed_ms"}, name)
            self.assertLessEqual(set(spec["frames_out"]), set(out), name)
            self.assertLessEqual(set(out), set(spec["frames_out"]) | set(spec["frames_out_optional"]), name)
            called.add(name)
            return body["result"], out

        with tempfile.TemporaryDirectory() as tmp:
            call("hello", {})
            call("init", {"preset": "tiny-1m", "seed": 0, "out": f"{tmp}/m", "model_type": "qwen3"})
            call("info", {})
            call("save", {"dir": f"{tmp}/m1", "policy_version": 1, "dtype": "float32"})
            call("load", {"dir": f"{tmp}/m1", "dtype": "float32", "attention": "auto"})
            _, scored = call("logprobs", {"row_lengths": [n], "temperature": 1.0, "entropy": True}, rows)
            lp = scored["logprobs"]
            pg = {**rows, "trainable": trainable, "loss_weights": torch.full((n,), 0.2), "old_logprobs": lp, "advantages": torch.ones(n), "prox_logprobs": lp, "ref_logprobs": lp}
            loss = {"clip_low": 0.2, "clip_high": 0.28, "is_mode": "truncate", "tis_cap": 2.0, "mask_low": 0.5, "mask_high": 2.0, "entropy_coef": 0.0, "kl_coef": 0.1}
            call("forward_backward", {"row_lengths": [n], "objective": "pg", "temperature": 1.0, "loss": loss}, pg)
            call("grad_sketch", {"dim": 16, "seed": 0})
            call("optim_step", {"lr": 0.01, "weight_decay": 0.0, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8, "max_grad_norm": 1.0})
            call("forward_backward", {"row_lengths": [n], "objective": "sft"}, {**rows, "trainable": trainable, "loss_weights": torch.full((n,), 0.2)})
            call("zero_grad", {})
            call("critic_init", {"from_policy": True})
            _, v = call("critic_values", {"row_lengths": [n]}, rows)
            critic_frames = {**rows, "trainable": trainable, "returns": torch.ones(n), "loss_weights": torch.full((n,), 0.2), "old_values": v["values"]}
            call("critic_forward_backward", {"row_lengths": [n], "value_clip": 0.2}, critic_frames)
            call("critic_optim_step", {"lr": 0.01})
            call("critic_save", {"dir": f"{tmp}/critic"})
            call("critic_load", {"dir": f"{tmp}/critic"})
            call("capo_probe", {"row_lengths": [n], "top_fraction": 0.25}, {**rows, **masks})
            call("forward_backward", {"row_lengths": [n], "capo": True}, {**pg, **masks})
            call("optim_step", {"lr": 0.01, "capo": True})
            call("checkpoint_save", {"dir": f"{tmp}/ckpt", "policy_version": 2, "extra": {"step": 1}})
            call("checkpoint_load", {"dir": f"{tmp}/ckpt", "dtype": "float32"})
            call("lora_init", {"rank": 2, "alpha": 4.0, "dropout": 0.0, "target_modules": "q_proj,v_proj", "seed": 1, "base_dir": f"{tmp}/ckpt"})
            call("shutdown", {})
        self.assertEqual(sorted(called), sorted(TABLE))


if __name__ == "__main__":
    unittest.main()
