"""`lora_init`: attach LoRA adapters to the loaded model (lora.py); from then on only the adapters train."""
from __future__ import annotations

from pathlib import Path
from typing import Dict

import torch

from ..errors import bad_request
from ..lora import LoraConfig, LoraState, attach, base_tensor_names, dir_fingerprint, model_base_fingerprint, parse_targets
from ..state import WorkerState
from .registry import Args, Reply, op


@op("lora_init")
def lora_init(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {rank, alpha? (default rank), dropout? (0), target_modules? (comma-separated; default all seven
    projections), seed? (0), base_dir}. `base_dir` must hold the weights now loaded (checked by fingerprint): it is the
    frozen base that checkpoints refer to and that exported adapters apply to, so it must outlive the run's checkpoints."""
    loaded = state.require_model()
    if loaded.lora is not None:
        raise bad_request("the model already has LoRA adapters (load the base model again to start over)")
    rank = args.req_int("rank")
    alpha = args.opt_float("alpha")
    cfg = LoraConfig(rank, float(rank) if alpha is None else alpha, args.opt_float("dropout", 0.0) or 0.0, parse_targets(args.opt_str("target_modules"))).validate()
    base_dir = Path(args.req_str("base_dir")).resolve()
    model = loaded.model
    names = base_tensor_names(model)
    recorded = dir_fingerprint(base_dir, names)
    dtype = next(model.parameters()).dtype
    check = recorded if dtype == torch.float32 else dir_fingerprint(base_dir, names, dtype)
    if check != model_base_fingerprint(model):
        raise bad_request(f"{base_dir} does not hold the weights now loaded: save them there before attaching LoRA")
    base_parameters = sum(p.numel() for p in model.parameters())
    adapters = attach(model, cfg, args.opt_int("seed", 0) or 0)
    loaded.lora = LoraState(cfg, base_dir, recorded)
    # The optimizer (full weights) and CAPO partitions (of full MLP weights) belong to the unadapted model.
    state.extensions.pop("optim", None)
    state.extensions.pop("capo", None)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return Reply({**loaded.lora.to_json(), "scale": cfg.scale, "adapters": adapters, "trainable_parameters": trainable, "base_parameters": base_parameters})
