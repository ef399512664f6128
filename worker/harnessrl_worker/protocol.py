"""Wire format shared with src/trainer/wire.ts (docs/worker.md, protocol version 1).

Every message, in both directions, is one line of UTF-8 JSON ending in "\\n". A message that carries arrays lists
them under "frames": [{"name", "dtype", "shape", "nbytes"}, ...]; the raw little-endian bytes of those arrays follow
the newline immediately, concatenated in the listed order, with nothing in between.

Request:  {"id": <int|str>, "op": <str>, "args": {...}, "frames": [...]?}
Response: {"id": ..., "ok": true, "result": {...}, "frames": [...]?}
          {"id": ..., "ok": false, "error": {"code": <str>, "message": <str>, "retryable": <bool>}}
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Dict, List, Optional, Protocol, Union

import torch

from .errors import WorkerError, bad_request
from .safetensors import tensor_bytes, tensor_from_bytes

WIRE_DTYPES: Dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float64": torch.float64,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
}
WIRE_NAMES: Dict[torch.dtype, str] = {v: k for k, v in WIRE_DTYPES.items()}
MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_FRAME_BYTES = 8 * 1024 * 1024 * 1024

RequestId = Union[int, str, None]


class InStream(Protocol):
    """What the reader needs from its input (sys.stdin.buffer, io.BytesIO)."""

    def readline(self, size: Optional[int] = -1, /) -> bytes: ...

    def readinto(self, buffer: memoryview, /) -> Optional[int]: ...


@dataclass
class Message:
    header: Dict[str, Any]
    frames: Dict[str, torch.Tensor] = field(default_factory=dict)
    # Set when the frames were read but their descriptions were wrong: answered as an error for this request's id.
    frame_error: Optional[WorkerError] = None


class ProtocolError(WorkerError):
    """The byte stream itself is malformed; the server answers it with id null."""

    def __init__(self, message: str) -> None:
        super().__init__("bad_message", message)


def _read_frames(stream: InStream, specs: Any) -> Dict[str, torch.Tensor]:
    if not isinstance(specs, list):
        raise ProtocolError("frames must be a list")
    # Read every announced byte first, so a bad spec never desynchronises the stream.
    sizes: List[int] = []
    for spec in specs:
        nbytes = spec.get("nbytes") if isinstance(spec, dict) else None
        if not isinstance(nbytes, int) or nbytes < 0 or nbytes > MAX_FRAME_BYTES:
            raise ProtocolError("every frame needs a non-negative integer nbytes")
        sizes.append(nbytes)
    blobs: List[bytearray] = []
    for n in sizes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = stream.readinto(view[got:])
            if not k:
                raise EOFError("stream ended inside a frame")
            got += k
        blobs.append(buf)
    out: Dict[str, torch.Tensor] = {}
    for spec, blob in zip(specs, blobs):
        name, dtype, shape = spec.get("name"), spec.get("dtype"), spec.get("shape")
        if not isinstance(name, str) or dtype not in WIRE_DTYPES or not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise bad_request(f"malformed frame spec {spec!r}")
        t_dtype = WIRE_DTYPES[dtype]
        numel = 1
        for d in shape:
            numel *= d
        if numel * torch.empty((), dtype=t_dtype).element_size() != len(blob):
            raise bad_request(f"frame {name!r}: nbytes does not match dtype and shape")
        out[name] = tensor_from_bytes(blob, t_dtype, shape)
    return out


def read_message(stream: InStream) -> Optional[Message]:
    """The next message, or None at a clean end of stream."""
    line = stream.readline(MAX_LINE_BYTES + 1)
    if not line:
        return None
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError("message line too long")
    if not line.strip():
        raise ProtocolError("empty line")
    try:
        header = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError(f"message is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise ProtocolError("message is not a JSON object")
    if "frames" not in header:
        return Message(header)
    try:
        return Message(header, _read_frames(stream, header.pop("frames")))
    except ProtocolError:
        raise
    except WorkerError as e:
        return Message(header, {}, e)


def encode_message(header: Dict[str, Any], frames: Optional[Dict[str, torch.Tensor]] = None) -> bytes:
    specs: List[Dict[str, Any]] = []
    blobs: List[bytes] = []
    for name, t in (frames or {}).items():
        if t.dtype not in WIRE_NAMES:
            raise WorkerError("internal", f"frame {name!r} has dtype {t.dtype} that the wire cannot carry")
        data = tensor_bytes(t)
        specs.append({"name": name, "dtype": WIRE_NAMES[t.dtype], "shape": list(t.shape), "nbytes": len(data)})
        blobs.append(data)
    body = dict(header)
    if specs:
        body["frames"] = specs
    line = json.dumps(body, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"
    return line + b"".join(blobs)


def write_message(stream: BinaryIO, header: Dict[str, Any], frames: Optional[Dict[str, torch.Tensor]] = None) -> None:
    stream.write(encode_message(header, frames))
    stream.flush()
