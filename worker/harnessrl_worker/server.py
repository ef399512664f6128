"""The request loop: read a message, dispatch to its op, answer. A failing request never ends the worker."""
from __future__ import annotations

import math
import sys
import time
import traceback
from typing import Any, BinaryIO, Callable, Dict, Mapping, Optional

import torch

from . import distributed
from .errors import WorkerError
from .ops import OPS, Args, Reply, check_frames
from .precision import autocast
from .protocol import InStream, ProtocolError, read_message, write_message
from .state import WorkerState


def _is_oom(e: BaseException) -> bool:
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom_type is not None and isinstance(e, oom_type)) or (isinstance(e, RuntimeError) and "out of memory" in str(e))


def finite_json(value: Any) -> Any:
    """JSON has no NaN/Infinity: non-finite floats in results become null rather than an unencodable reply."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def error_body(request_id: Any, code: str, message: str, retryable: bool) -> Dict[str, Any]:
    return {"id": request_id, "ok": False, "error": {"code": code, "message": message, "retryable": retryable}}


def handle(state: WorkerState, header: Dict[str, Any], frames: Dict[str, torch.Tensor], overrides: Optional[Mapping[str, Callable[..., Any]]] = None) -> tuple[Dict[str, Any], Dict[str, torch.Tensor]]:
    """One request → (response header, response frames). Every exception becomes an error response. `overrides`
    replaces some handlers (ranks > 0 do not write files: distributed.FOLLOWER_OPS)."""
    request_id = header.get("id")
    if not isinstance(request_id, (int, str)) or isinstance(request_id, bool):
        return error_body(None, "bad_request", "request id must be an integer or a string", False), {}
    name = header.get("op")
    handler = OPS.get(name) if isinstance(name, str) else None
    if handler is not None and overrides is not None and name in overrides:
        handler = overrides[name]
    if handler is None:
        return error_body(request_id, "unknown_op", f"unknown op {name!r} (known: {', '.join(sorted(OPS))})", False), {}
    started = time.perf_counter()
    try:
        check_frames(name, frames)
        with autocast(state.settings.device, state.settings.autocast):
            reply: Reply = handler(state, Args(header.get("args"), name), frames)
    except WorkerError as e:
        return error_body(request_id, e.code, e.message, e.retryable), {}
    except Exception as e:  # noqa: BLE001 - the worker must survive any op failure
        if _is_oom(e):
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            return error_body(request_id, "out_of_memory", str(e), True), {}
        traceback.print_exc(file=sys.stderr)
        return error_body(request_id, "internal", f"{type(e).__name__}: {e}", False), {}
    result = finite_json(dict(reply.result))
    result.setdefault("elapsed_ms", round((time.perf_counter() - started) * 1000, 3))
    return {"id": request_id, "ok": True, "result": result}, reply.frames


def serve(state: WorkerState, inp: InStream, out: BinaryIO) -> int:
    """Answers requests in arrival order until `shutdown` or end of input."""
    while not state.stopping:
        try:
            msg = read_message(inp)
        except ProtocolError as e:
            write_message(out, error_body(None, e.code, e.message, False))
            continue
        except EOFError:
            return 0
        if msg is None:
            return 0
        frames: Dict[str, torch.Tensor] = {}
        if msg.frame_error is not None:
            err = msg.frame_error
            body = error_body(msg.header.get("id"), err.code, err.message, err.retryable)
        else:
            d = state.settings.dist
            body, frames = distributed.lead(d, state, msg.header, msg.frames, handle) if distributed.active(d) else handle(state, msg.header, msg.frames)
        try:
            write_message(out, body, frames)
        except (ValueError, WorkerError) as e:
            # e.g. a NaN in a result (JSON forbids it): still answer.
            write_message(out, error_body(body.get("id"), "internal", f"could not encode the response: {e}", False))
    return 0
