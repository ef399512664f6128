"""`init`, `load`, `save`, `info`: model directories in and out of the worker."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import torch

from ..errors import bad_request
from ..modeldir import LoadedModel, init_model_dir, load_model_dir, save_model_dir
from ..state import WorkerState
from .registry import Args, Reply, op


def describe(loaded: LoadedModel) -> Dict[str, Any]:
    p = next(loaded.model.parameters())
    return {
        "dir": None if loaded.directory is None else str(loaded.directory),
        "config": loaded.config.to_hf(),
        "parameters": loaded.model.num_parameters(),
        "dtype": str(p.dtype).replace("torch.", ""),
        "device": str(p.device),
        "policy_version": loaded.config.harnessrl.policy_version,
        # Rows scored (ids ≥ this have no text) and ids below that masked for having none (vocab.py).
        "sampled_rows": loaded.model.sampled_rows,
        "masked_ids": 0 if loaded.model.textless is None else int(loaded.model.textless.numel()),
    }


@op("init")
def init(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """Creates a model directory from a preset and keeps the model loaded (float32 on the worker's device)."""
    out = Path(args.req_str("out"))
    tokenizer_dir = args.opt_str("tokenizer_dir")
    loaded = init_model_dir(args.req_str("preset"), args.req_int("seed"), out, args.opt_str("model_type"), args.opt_str("chat_template"), None if tokenizer_dir is None else Path(tokenizer_dir))
    loaded.model.to(state.settings.device).eval()
    state.loaded = loaded
    forget_policy_state(state)
    return Reply(describe(loaded))


@op("load")
def load(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """Loads `dir` (tiny or real HF Qwen2/Qwen3). dtype: float32 (default) | bfloat16 | float16 | auto."""
    loaded = load_model_dir(Path(args.req_str("dir")), state.settings.device, args.opt_str("dtype", "float32") or "float32", args.opt_str("attention", "auto") or "auto")
    state.loaded = loaded
    forget_policy_state(state)
    return Reply(describe(loaded))


def forget_policy_state(state: WorkerState) -> None:
    """CAPO partitions belong to the model they were probed on; a newly loaded policy must not inherit them (same
    shapes would silently mask the wrong units). The optimizer already restarts per model (ops/train.py)."""
    state.extensions.pop("capo", None)


@op("save")
def save(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """Writes the loaded model to `dir` (default: where it came from), optionally stamping a new policy_version."""
    loaded = state.require_model()
    target = args.opt_str("dir")
    out = Path(target) if target is not None else loaded.directory
    if out is None:
        raise bad_request("args.dir is required: the model has no directory yet")
    save_model_dir(loaded, out, args.opt_int("policy_version"), args.opt_str("dtype"))
    return Reply(describe(loaded))


@op("info")
def info(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    return Reply(describe(state.require_model()))
