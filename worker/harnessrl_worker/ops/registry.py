"""The op registry: each op is a function in its own module, registered by name. New ops are new files."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

import torch

from ..errors import bad_request
from ..state import WorkerState


@dataclass
class Reply:
    result: Dict[str, Any] = field(default_factory=dict)
    frames: Dict[str, torch.Tensor] = field(default_factory=dict)


Handler = Callable[[WorkerState, "Args", Dict[str, torch.Tensor]], Reply]
OPS: Dict[str, Handler] = {}


def op(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        if name in OPS:
            raise RuntimeError(f"op {name!r} registered twice")
        OPS[name] = fn
        return fn

    return register


class Args:
    """Typed access to a request's `args` object; a wrong or missing field is a bad_request, not a crash."""

    def __init__(self, raw: Any) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise bad_request("args must be a JSON object")
        self.raw: Dict[str, Any] = raw

    def _get(self, key: str, kinds: tuple[type, ...], what: str, default: Any, required: bool) -> Any:
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
