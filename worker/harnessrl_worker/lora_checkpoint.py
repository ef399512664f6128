"""Loading an adapted model back from a checkpoint: the frozen base from its recorded directory (fingerprint-checked),
the adapters from the checkpoint's `adapter/` (lora.py). The checkpoint's own weights are the merged policy, which
cannot be split back into base and adapter exactly, so they are not what training resumes from."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict

import torch

from .errors import invalid_model, not_found
from .lora import LoraConfig, LoraState, attach, base_tensor_names, dir_fingerprint, load_adapter_weights
from .modeldir import LoadedModel, load_model_dir, read_config, shard_limit


def load_adapted(directory: Path, lora_json: Dict[str, Any], device: torch.device, dtype_name: str) -> LoadedModel:
    try:
        cfg = LoraConfig.from_json(lora_json)
        base_dir = Path(str(lora_json["base_dir"]))
        recorded = str(lora_json["base_fingerprint"])
    except (KeyError, TypeError, ValueError) as e:
        raise invalid_model(f"{directory}: malformed LoRA state in the checkpoint ({e})") from None
    if not (base_dir / "config.json").exists():
        raise not_found(f"{directory}: the LoRA base model {base_dir} is missing (the checkpoint holds only the adapter)")
    loaded = load_model_dir(base_dir, device, dtype_name)
    if dir_fingerprint(base_dir, base_tensor_names(loaded.model)) != recorded:
        raise invalid_model(f"{directory}: the LoRA base {base_dir} holds other weights than the adapter was trained on")
    attach(loaded.model, cfg, 0)
    load_adapter_weights(loaded.model, directory)
    # The checkpoint's config (policy version) and layout, the base's weights under the adapter.
    return LoadedModel(loaded.model, read_config(directory), directory, shard_limit(directory), LoraState(cfg, base_dir, recorded))
