"""CAPO (Harness-RL, REFERENCE §2): parameter partitions tied to action tokens and to argument tokens.

Probe: forward hooks on every MLP up-projection record, per hidden unit, the mean positive activation over the
positions that produce action tokens and over those that produce argument tokens (the producing position of token i is
parent[i], where its logprob is read — the activations its gradient flows through). Per layer the top `top_fraction`
of units form each partition (partitions may overlap). A unit's mask covers its rows of gate_proj and up_proj and its
column of down_proj; every other parameter is in neither partition and must not move under a CAPO update.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import torch

from .errors import bad_request, invalid_model
from .model import CausalLM
from .packed import PackedRow, micro_batches, pad_batch


@dataclass
class CapoMasks:
    """Per layer, boolean unit masks [intermediate_size] for the action and the args partition."""

    action_units: List[torch.Tensor]
    args_units: List[torch.Tensor]
    top_fraction: float

    def to_tensors(self, prefix: str) -> Dict[str, torch.Tensor]:
        """The unit masks as uint8 tensors `<prefix>action.<layer>` / `<prefix>args.<layer>` (for checkpoints)."""
        out: Dict[str, torch.Tensor] = {}
        for i, (a, g) in enumerate(zip(self.action_units, self.args_units)):
            out[f"{prefix}action.{i}"] = a.detach().cpu().to(torch.uint8)
            out[f"{prefix}args.{i}"] = g.detach().cpu().to(torch.uint8)
        return out

    @staticmethod
    def from_tensors(tensors: Dict[str, torch.Tensor], prefix: str, top_fraction: float, model: CausalLM) -> "CapoMasks":
        """Rebuilds masks saved by to_tensors; they must fit the model (one mask per layer, one entry per MLP unit)."""
        layers = list(model.model.layers)
        action: List[torch.Tensor] = []
        args: List[torch.Tensor] = []
        for i, layer in enumerate(layers):
            units = layer.mlp.up_proj.out_features
            for key, out in (("action", action), ("args", args)):
                t = tensors.get(f"{prefix}{key}.{i}")
                if t is None or tuple(t.shape) != (units,):
                    raise invalid_model(f"CAPO {key} mask of layer {i} is missing or does not have {units} units")
                out.append(t.to(torch.bool).clone())
        if sum(1 for k in tensors if k.startswith(prefix)) != 2 * len(layers):
            raise invalid_model(f"CAPO masks do not match the model's {len(layers)} layers")
        return CapoMasks(action, args, top_fraction)

    def param_masks(self, model: CausalLM, which: str) -> Dict[str, torch.Tensor]:
        """Elementwise masks for the MLP weights of one partition ("action", "args" or "union"), keyed by HF name."""
        out: Dict[str, torch.Tensor] = {}
        for i, layer in enumerate(model.model.layers):
            a, g = self.action_units[i], self.args_units[i]
            units = a if which == "action" else g if which == "args" else a | g
            units = units.to(layer.mlp.up_proj.weight.device)
            p = f"model.layers.{i}.mlp."
            rows = units[:, None].expand_as(layer.mlp.up_proj.weight)
            out[p + "gate_proj.weight"] = rows
            out[p + "up_proj.weight"] = rows
            out[p + "down_proj.weight"] = units[None, :].expand_as(layer.mlp.down_proj.weight)
        return out


def probe(model: CausalLM, rows: Sequence[PackedRow], action: Sequence[torch.Tensor], args: Sequence[torch.Tensor], top_fraction: float, token_budget: int) -> Tuple[CapoMasks, Dict[str, float]]:
    """Runs the rows (typically successful trajectories) and picks each layer's top units for both partitions."""
    if not 0 < top_fraction <= 1:
        raise bad_request("top_fraction must be in (0, 1]")
    layers = list(model.model.layers)
    inter = layers[0].mlp.up_proj.out_features if layers else 0
    sums = {k: [torch.zeros(inter, dtype=torch.float64) for _ in layers] for k in ("action", "args")}
    counts = {"action": 0.0, "args": 0.0}
    selection: Dict[str, torch.Tensor] = {}

    def hook(index: int) -> "torch.utils.hooks.RemovableHandle":
        def record(_module: torch.nn.Module, _inputs: Tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
            positive = output.detach().clamp(min=0).to(torch.float64)
            for key in ("action", "args"):
                sel = selection[key].to(positive.device)
                sums[key][index] += (positive * sel[..., None]).sum(dim=(0, 1)).cpu()

        return layers[index].mlp.up_proj.register_forward_hook(record)

    handles = [hook(i) for i in range(len(layers))]
    device = next(model.parameters()).device
    try:
        with torch.no_grad():
            for group in micro_batches([r.length for r in rows], token_budget):
                batch_rows = [rows[i] for i in group]
                width = max(max(r.length for r in batch_rows), 1)
                for key, masks in (("action", action), ("args", args)):
                    sel = torch.zeros(len(group), width, dtype=torch.float64)
                    for b, i in enumerate(group):
                        r = rows[i]
                        marked = (masks[i].to(torch.bool)) & (r.parent >= 0)
                        # Producing positions of the marked tokens (a position may produce several children).
                        sel[b].index_add_(0, r.parent[marked], torch.ones(int(marked.sum()), dtype=torch.float64))
                    selection[key] = sel
                    counts[key] += float(sel.sum())
                ids, pos, mask = pad_batch(batch_rows, device)
                model.hidden_states(ids, pos, mask)
    finally:
        for h in handles:
            h.remove()
    if counts["action"] == 0 or counts["args"] == 0:
        raise bad_request("the probe batch needs both action and args tokens")
    k = max(1, math.ceil(top_fraction * inter))
    picked: Dict[str, List[torch.Tensor]] = {}
    for key in ("action", "args"):
        picked[key] = []
        for layer_sum in sums[key]:
            m = torch.zeros(inter, dtype=torch.bool)
            m[torch.topk(layer_sum / counts[key], k).indices] = True
            picked[key].append(m)
    overlap = sum(float((a & g).sum()) for a, g in zip(picked["action"], picked["args"])) / max(1, k * len(layers))
    stats = {"units_per_layer": float(k), "overlap_fraction": overlap, "action_positions": counts["action"], "args_positions": counts["args"]}
    return CapoMasks(picked["action"], picked["args"], top_fraction), stats
