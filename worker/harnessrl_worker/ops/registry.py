"""The op registry: each op is a function in its own module, registered by name. New ops are new files.

Every op, its arguments and frames are listed in one table, `ops.json` next to this package's modules (the TypeScript
client and docs/worker.md are checked against it too): registering an op the table lacks fails at import, a request
carrying an argument or frame the table does not list for its op is a bad_request, and a handler reading an argument
its op does not declare is a bug (tests/test_ops_table.py also checks the handlers' reads statically).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, Optional

import torch

from ..errors import bad_request
from ..state import WorkerState


@dataclass
class Reply:
    result: Dict[str, Any] = field(default_factory=dict)
    frames: Dict[str, torch.Tensor] = field(default_factory=dict)


Handler = Callable[[WorkerState, "Args", Dict[str, torch.Tensor]], Reply]
OPS: Dict[str, Handler] = {}

TABLE_PATH = Path(__file__).resolve().parent.parent / "ops.json"
TABLE: Dict[str, Dict[str, Any]] = json.loads(TABLE_PATH.read_text(encoding="utf-8"))["ops"]


def declared_args(name: str) -> FrozenSet[str]:
    return frozenset(TABLE[name]["args"])


def declared_frames(name: str) -> FrozenSet[str]:
    return frozenset(TABLE[name]["frames_in"])


def op(name: str) -> Callable[[Handler], Handler]:
    if name not in TABLE:
        raise RuntimeError(f"op {name!r} is not in {TABLE_PATH.name}: add it to the table first")

    def register(fn: Handler) -> Handler:
        if name in OPS:
            raise RuntimeError(f"op {name!r} registered twice")
        OPS[name] = fn
        return fn

    return register


def check_frames(name: str, frames: Dict[str, torch.Tensor]) -> None:
    """A frame the table does not list for the op would be ignored silently: refuse it instead."""
    unknown = sorted(set(frames) - declared_frames(name))
    if unknown:
        raise bad_request(f"{name} takes no frame {', '.join(map(repr, unknown))} (known: {', '.join(sorted(declared_frames(name))) or 'none'})")


class Args:
    """Typed access to a request's `args` object; a wrong, missing or unknown field is a bad_request, not a crash.
    With `op`, only the arguments the table declares for that op are accepted (and may be read)."""

    def __init__(self, raw: Any, op: Optional[str] = None) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise bad_request("args must be a JSON object")
        self.raw: Dict[str, Any] = raw
        self.declared: Optional[FrozenSet[str]] = None if op is None else declared_args(op)
        self.op = op
        if self.declared is not None:
            unknown = sorted(k for k in raw if k not in self.declared)
            if unknown:
                raise bad_request(f"{op} takes no argument {', '.join(map(repr, unknown))} (known: {', '.join(sorted(self.declared)) or 'none'})")

    def _get(self, key: str, kinds: tuple[type, ...], what: str, default: Any, required: bool) -> Any:
        if self.declared is not None and key not in self.declared:
            raise RuntimeError(f"op {self.op} reads args.{key}, which {TABLE_PATH.name} does not declare")
        if key not in self.raw or self.raw[key] is None:
            if required:
                raise bad_request(f"args.{key} is required")
            return default
        v = self.raw[key]
        if isinstance(v, bool) and bool not in kinds:
            raise bad_request(f"args.{key} must be {what}")
        if not isinstance(v, kinds):
            raise bad_request(f"args.{key} must be {what}")
        return v

    def req_str(self, key: str) -> str:
        return str(self._get(key, (str,), "a string", None, True))

    def opt_str(self, key: str, default: Optional[str] = None) -> Optional[str]:
        v = self._get(key, (str,), "a string", default, False)
        return None if v is None else str(v)

    def req_int(self, key: str) -> int:
        return int(self._get(key, (int,), "an integer", None, True))

    def opt_int(self, key: str, default: Optional[int] = None) -> Optional[int]:
        v = self._get(key, (int,), "an integer", default, False)
        return None if v is None else int(v)

    def opt_float(self, key: str, default: Optional[float] = None) -> Optional[float]:
        v = self._get(key, (int, float), "a number", default, False)
        return None if v is None else float(v)

    def opt_bool(self, key: str, default: bool) -> bool:
        return bool(self._get(key, (bool,), "a boolean", default, False))

    def int_list(self, key: str) -> list[int]:
        v = self._get(key, (list,), "a list of integers", None, True)
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            raise bad_request(f"args.{key} must be a list of integers")
        return [int(x) for x in v]


def frame(frames: Dict[str, torch.Tensor], name: str, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    t = frames.get(name)
    if t is None:
        raise bad_request(f"frame {name!r} is required")
    if dtype is not None and t.dtype != dtype:
        raise bad_request(f"frame {name!r} must be {dtype}, got {t.dtype}")
    return t
