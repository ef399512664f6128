"""CAPO ops: `capo_probe` picks the action/args parameter partitions; `forward_backward` with `capo: true` routes
each restricted loss's gradient to its partition (CapoAccumulator); `optim_step` with `capo: true` keeps every
parameter entry outside both partitions exactly where it was (AdamW momentum and weight decay would move it)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch

from ..capo import CapoMasks, probe
from ..errors import WorkerError, bad_request
from ..model import CausalLM
from ..packed import split_rows, validate_row
from ..state import WorkerState
from .registry import Args, Reply, frame, op


def require_masks(state: WorkerState) -> CapoMasks:
    masks: Optional[CapoMasks] = state.extensions.get("capo")
    if masks is None:
        raise WorkerError("no_capo_masks", "no CAPO partitions (send capo_probe first)")
    return masks


@op("capo_probe")
def capo_probe(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {row_lengths, top_fraction? (0.25)}; frames: tokens, parent, positions (int32), action_mask, args_mask
    (uint8). Replaces the current partitions (re-probe periodically)."""
    loaded = state.require_model()
    lengths = args.int_list("row_lengths")
    rows = split_rows(frame(frames, "tokens", torch.int32), frame(frames, "parent", torch.int32), frame(frames, "positions", torch.int32), lengths)
    for i, r in enumerate(rows):
        validate_row(r, loaded.config.vocab_size, loaded.config.max_position_embeddings, i)
    action, args_mask = frame(frames, "action_mask", torch.uint8), frame(frames, "args_mask", torch.uint8)
    starts = [sum(lengths[:i]) for i in range(len(lengths))]

    def per_row(m: torch.Tensor) -> List[torch.Tensor]:
        return [m[s : s + n] for s, n in zip(starts, lengths)]

    top = args.opt_float("top_fraction", 0.25)
    masks, stats = probe(loaded.model, rows, per_row(action), per_row(args_mask), 0.25 if top is None else top, state.settings.token_budget)
    state.extensions["capo"] = masks
    return Reply(stats)


@dataclass
class CapoAccumulator:
    """Collects ∇L_a and ∇L_g over micro-batches, then adds M_a ⊙ ∇L_a + M_g ⊙ ∇L_g to the parameters' gradients."""

    model: CausalLM
    masks: CapoMasks
    action: torch.Tensor
    args: torch.Tensor
    names: List[str]
    params: List[torch.nn.Parameter]
    grad_a: List[torch.Tensor] = field(default_factory=list)
    grad_g: List[torch.Tensor] = field(default_factory=list)

    @staticmethod
    def start(state: WorkerState, model: CausalLM, action: torch.Tensor, args: torch.Tensor, total: int) -> "CapoAccumulator":
        if action.shape != (total,) or args.shape != (total,):
            raise bad_request(f"action_mask and args_mask need one entry per token ({total})")
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        acc = CapoAccumulator(model, require_masks(state), action, args, [n for n, _ in named], [p for _, p in named])
        acc.grad_a = [torch.zeros_like(p) for p in acc.params]
        acc.grad_g = [torch.zeros_like(p) for p in acc.params]
        return acc

    def split(self, token_loss: torch.Tensor, sl: slice) -> Tuple[torch.Tensor, torch.Tensor]:
        """One row's weighted token losses restricted to its action tokens and to its args tokens."""
        dev = token_loss.device
        return (token_loss * self.action[sl].to(dev)).sum(), (token_loss * self.args[sl].to(dev)).sum()

    def backward(self, loss_a: torch.Tensor, loss_g: torch.Tensor) -> None:
        ga = torch.autograd.grad(loss_a, self.params, retain_graph=True, allow_unused=True)
        gg = torch.autograd.grad(loss_g, self.params, allow_unused=True)
        for i, (a, g) in enumerate(zip(ga, gg)):
            if a is not None:
                self.grad_a[i] += a
            if g is not None:
                self.grad_g[i] += g

    def finish(self) -> Dict[str, float]:
        dot = sum(float((a.double() * g.double()).sum()) for a, g in zip(self.grad_a, self.grad_g))
        na = math.sqrt(sum(float((a.double() ** 2).sum()) for a in self.grad_a))
        ng = math.sqrt(sum(float((g.double() ** 2).sum()) for g in self.grad_g))
        m_a = self.masks.param_masks(self.model, "action")
        m_g = self.masks.param_masks(self.model, "args")
        for name, p, a, g in zip(self.names, self.params, self.grad_a, self.grad_g):
            combined = torch.zeros_like(p)
            if name in m_a:
                combined = combined + a * m_a[name] + g * m_g[name]
            p.grad = combined if p.grad is None else p.grad + combined
        return {"capo_grad_cosine": dot / (na * ng) if na > 0 and ng > 0 else 0.0, "capo_action_grad_norm": na, "capo_args_grad_norm": ng}


def freeze_outside_partitions(state: WorkerState, model: CausalLM) -> Dict[str, torch.Tensor]:
    """Snapshot of every parameter, taken before a CAPO optimizer step (see restore_outside_partitions)."""
    require_masks(state)
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def restore_outside_partitions(state: WorkerState, model: CausalLM, before: Dict[str, torch.Tensor]) -> int:
    """Puts back every entry outside both partitions; returns how many entries were held still."""
    union = require_masks(state).param_masks(model, "union")
    held = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            keep_new = union.get(name)
            if keep_new is None:
                p.copy_(before[name])
                held += p.numel()
            else:
                p.copy_(torch.where(keep_new, p, before[name]))
                held += int((~keep_new).sum())
    return held
