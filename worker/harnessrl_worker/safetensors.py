"""Safetensors read/write with only torch and the standard library.

Format: an 8-byte little-endian header length, a JSON header mapping tensor names to
{dtype, shape, data_offsets: [begin, end]} (offsets relative to the end of the header) plus an optional
"__metadata__" string map, then the raw little-endian tensor bytes. Sharded checkpoints add
`model.safetensors.index.json` with a `weight_map` from tensor name to shard file.
"""
from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

import torch

from .errors import WorkerError, invalid_model, not_found

DTYPES: Dict[str, torch.dtype] = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
DTYPE_NAMES: Dict[torch.dtype, str] = {v: k for k, v in DTYPES.items()}

# Headers larger than this are not plausible checkpoints (the reference implementation uses 100 MB).
MAX_HEADER_BYTES = 100_000_000

if sys.byteorder != "little":  # pragma: no cover - every supported platform is little-endian
    raise ImportError("harnessrl_worker requires a little-endian host")


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: Tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True)
class Header:
    tensors: Dict[str, TensorInfo]
    metadata: Dict[str, str]
    data_start: int


def tensor_bytes(t: torch.Tensor) -> bytes:
    """Raw bytes of a tensor in memory order, without numpy (which cannot represent bfloat16 anyway)."""
    c = t.detach().contiguous().cpu()
    n = c.numel() * c.element_size()
    if n == 0:
        return b""
    return ctypes.string_at(c.data_ptr(), n)


def tensor_from_bytes(data: bytes | bytearray | memoryview, dtype: torch.dtype, shape: Iterable[int]) -> torch.Tensor:
    dims = tuple(int(d) for d in shape)
    if len(data) == 0:
        return torch.empty(dims, dtype=dtype)
    buf = data if isinstance(data, bytearray) else bytearray(data)
    return torch.frombuffer(buf, dtype=dtype).reshape(dims)


def read_header(path: Path) -> Header:
    try:
        with open(path, "rb") as f:
            raw_len = f.read(8)
            if len(raw_len) != 8:
                raise invalid_model(f"{path}: not a safetensors file (shorter than 8 bytes)")
            (n,) = struct.unpack("<Q", raw_len)
            if n > MAX_HEADER_BYTES:
                raise invalid_model(f"{path}: header length {n} is not plausible")
            header_bytes = f.read(n)
            size = os.fstat(f.fileno()).st_size
    except FileNotFoundError:
        raise not_found(f"{path}: no such file") from None
    if len(header_bytes) != n:
        raise invalid_model(f"{path}: truncated header")
    try:
        obj = json.loads(header_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise invalid_model(f"{path}: header is not JSON ({e})") from None
    if not isinstance(obj, dict):
        raise invalid_model(f"{path}: header is not a JSON object")
    metadata_raw = obj.pop("__metadata__", {}) or {}
    metadata = {str(k): str(v) for k, v in metadata_raw.items()} if isinstance(metadata_raw, dict) else {}
    data_start = 8 + n
    tensors: Dict[str, TensorInfo] = {}
    for name, info in obj.items():
        try:
            dtype = str(info["dtype"])
            shape = tuple(int(d) for d in info["shape"])
            begin, end = (int(x) for x in info["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise invalid_model(f"{path}: malformed header entry for {name!r}") from None
        if dtype not in DTYPES:
            raise invalid_model(f"{path}: tensor {name!r} has unsupported dtype {dtype}")
        numel = 1
        for d in shape:
            numel *= d
        expected = numel * torch.empty((), dtype=DTYPES[dtype]).element_size()
        if end - begin != expected or begin < 0 or data_start + end > size:
            raise invalid_model(f"{path}: tensor {name!r} has inconsistent offsets")
        tensors[name] = TensorInfo(name, dtype, shape, begin, end)
    return Header(tensors, metadata, data_start)


def load_file(path: Path, names: Optional[Iterable[str]] = None) -> Dict[str, torch.Tensor]:
    """Reads all (or the named) tensors of one safetensors file into CPU tensors."""
    header = read_header(path)
    wanted = list(header.tensors) if names is None else list(names)
    out: Dict[str, torch.Tensor] = {}
    with open(path, "rb") as f:
        for name in wanted:
            info = header.tensors.get(name)
            if info is None:
                raise invalid_model(f"{path}: no tensor named {name!r}")
            f.seek(header.data_start + info.begin)
            buf = bytearray(info.end - info.begin)
            if f.readinto(buf) != len(buf):
                raise invalid_model(f"{path}: truncated data for {name!r}")
            out[name] = tensor_from_bytes(buf, DTYPES[info.dtype], info.shape)
    return out


def save_file(tensors: Mapping[str, torch.Tensor], path: Path, metadata: Optional[Mapping[str, str]] = None) -> None:
    """Writes tensors (sorted by name) atomically: a temporary file renamed into place."""
    header: Dict[str, object] = {"__metadata__": dict(metadata or {"format": "pt"})}
    offset = 0
    order: List[str] = sorted(tensors)
    for name in order:
        t = tensors[name]
        if t.dtype not in DTYPE_NAMES:
            raise WorkerError("bad_request", f"tensor {name!r} has unsupported dtype {t.dtype}")
        n = t.numel() * t.element_size()
        header[name] = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + n]}
        offset += n
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    # Pad with spaces so tensor data starts 8-byte aligned, as the reference writer does.
    header_bytes += b" " * ((8 - len(header_bytes) % 8) % 8)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)))
        f.write(header_bytes)
        for name in order:
            f.write(tensor_bytes(tensors[name]))
    os.replace(tmp, path)


def checkpoint_files(model_dir: Path) -> Dict[str, Path]:
    """Maps every tensor name of a model directory to the file holding it (single file or sharded index)."""
    index = model_dir / "model.safetensors.index.json"
    single = model_dir / "model.safetensors"
    # A single file wins over an index, as in src/weights/safetensors.ts (saving over a sharded dir writes one file).
    if single.exists():
        return {name: single for name in read_header(single).tensors}
    if index.exists():
        try:
            weight_map = json.loads(index.read_text("utf-8"))["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise invalid_model(f"{index}: not a safetensors index (no weight_map)") from None
        return {str(name): model_dir / str(file) for name, file in weight_map.items()}
    raise not_found(f"{model_dir}: neither model.safetensors nor model.safetensors.index.json")


def load_checkpoint(model_dir: Path) -> Dict[str, torch.Tensor]:
    """Reads every tensor of a (possibly sharded) checkpoint."""
    by_file: Dict[Path, List[str]] = {}
    for name, file in checkpoint_files(model_dir).items():
        by_file.setdefault(file, []).append(name)
    out: Dict[str, torch.Tensor] = {}
    for file, names in by_file.items():
        out.update(load_file(file, names))
    return out
