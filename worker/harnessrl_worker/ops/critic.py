"""PPO critic ops: `critic_init`, `critic_values`, `critic_forward_backward`, `critic_optim_step`, `critic_save`,
`critic_load`. The critic lives beside the policy in the same worker with its own AdamW."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import torch

from .. import distributed
from ..critic import Critic, critic_from_policy, critic_from_seed, load_critic, save_critic
from ..errors import WorkerError, bad_request
from ..packed import PackedRow, forward_micro_batches, split_rows, validate_row
from ..state import WorkerState
from .registry import Args, Reply, frame, op
from .train import OptimState, adamw_args, adamw_step


@dataclass
class CriticState:
    critic: Critic
    optim: Optional[OptimState] = None


def require_critic(state: WorkerState) -> CriticState:
    cs: Optional[CriticState] = state.extensions.get("critic")
    if cs is None:
        raise WorkerError("no_critic", "no critic (send critic_init or critic_load first)")
    return cs


def critic_rows(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> List[PackedRow]:
    cfg = require_critic(state).critic.config
    rows = split_rows(frame(frames, "tokens", torch.int32), frame(frames, "parent", torch.int32), frame(frames, "positions", torch.int32), args.int_list("row_lengths"))
    for i, r in enumerate(rows):
        validate_row(r, cfg.vocab_size, cfg.max_position_embeddings, i)
    return rows


def describe(cs: CriticState) -> Dict[str, object]:
    p = next(cs.critic.parameters())
    return {"parameters": sum(t.numel() for t in cs.critic.parameters()), "dtype": str(p.dtype).replace("torch.", ""), "optimizer_steps": 0 if cs.optim is None else cs.optim.steps}


@op("critic_init")
def critic_init(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {from_policy? (true): copy the loaded policy's trunk; else seed (int) for a fresh trunk}. Value head = 0."""
    loaded = state.require_model()
    if args.opt_bool("from_policy", True):
        # On the policy's device (a CPU-built copy would silently train the critic on the CPU).
        critic = critic_from_policy(loaded.model).float().to(next(loaded.model.parameters()).device)
    else:
        critic = critic_from_seed(loaded.config, args.req_int("seed")).to(state.settings.device)
    state.extensions["critic"] = CriticState(critic.eval())
    return Reply(describe(state.extensions["critic"]))


@op("critic_values")
def critic_values(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """frames: tokens, parent, positions (int32) → values (float32; V at parent[i] for token i, 0 for roots)."""
    cs = require_critic(state)
    rows = critic_rows(state, args, frames)
    # Several ranks: each scores its share of the rows (by tokens), the others' stay zero, the sum is the answer.
    mine = distributed.my_rows(state.settings.dist, range(len(rows)), [r.length for r in rows])
    out: List[torch.Tensor] = [torch.zeros(r.length) for r in rows]
    with torch.no_grad():
        for group, hidden in forward_micro_batches(cs.critic.trunk, [rows[i] for i in mine], state.settings.token_budget):
            for b, k in enumerate(group):
                out[mine[k]] = cs.critic.values(hidden[b], rows[mine[k]]).float().cpu()
    values = distributed.sum_tensor(state.settings.dist, torch.cat(out)) if rows else torch.zeros(0)
    return Reply({"rows": len(rows)}, {"values": values})


@op("critic_forward_backward")
def critic_forward_backward(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {row_lengths, value_clip? (null = off)}; frames: tokens, parent, positions, trainable (uint8), returns,
    loss_weights, optional old_values (float32; needed for value_clip). Accumulates ∇ Σ w·½·max((V−R)², (Vclip−R)²)."""
    cs = require_critic(state)
    rows = critic_rows(state, args, frames)
    total = sum(r.length for r in rows)
    trainable = frame(frames, "trainable", torch.uint8)
    returns = frame(frames, "returns", torch.float32)
    weights = frame(frames, "loss_weights", torch.float32)
    old_values = frames.get("old_values")
    clip = args.opt_float("value_clip")
    if clip is not None and old_values is None:
        raise bad_request("value_clip needs the old_values frame")
    for name, t in (("trainable", trainable), ("returns", returns), ("loss_weights", weights)) + ((("old_values", old_values),) if old_values is not None else ()):
        if t.shape != (total,):
            raise bad_request(f"frame {name!r} must have one entry per token ({total})")
    starts = [0]
    for r in rows[:-1]:
        starts.append(starts[-1] + r.length)
    device = next(cs.critic.parameters()).device
    loss_sum, n_tokens, clipped = 0.0, 0.0, 0.0
    values_out = torch.zeros(total, dtype=torch.float32)
    # Several ranks: each takes its share of the rows (by trainable tokens); values and statistics are summed.
    d = state.settings.dist
    mine = distributed.my_rows(d, range(len(rows)), [int(trainable[s : s + r.length].sum()) for s, r in zip(starts, rows)])
    for group, hidden in forward_micro_batches(cs.critic.trunk, [rows[i] for i in mine], state.settings.token_budget):
        losses = []
        for b, k in enumerate(group):
            i = mine[k]
            sl = slice(starts[i], starts[i] + rows[i].length)
            v = cs.critic.values(hidden[b], rows[i])
            values_out[sl] = v.detach().float().cpu()
            mask = trainable[sl].to(device).to(torch.bool)
            target = returns[sl].to(device)
            err = (v - target) ** 2
            if clip is not None and old_values is not None:
                old = old_values[sl].to(device)
                v_clipped = old + (v - old).clamp(-clip, clip)
                err_clipped = (v_clipped - target) ** 2
                clipped += float(((err_clipped > err) & mask).sum())
                err = torch.maximum(err, err_clipped)
            per_token = 0.5 * err * weights[sl].to(device) * mask
            losses.append(per_token.sum())
            loss_sum += float(per_token.detach().sum())
            n_tokens += float(mask.sum())
        torch.stack(losses).sum().backward()
    distributed.sum_tensor(d, values_out)
    totals, _ = distributed.reduce_stats(d, {"loss": loss_sum, "tokens": n_tokens, "clipped": clipped}, {})
    loss_sum, n_tokens, clipped = totals.get("loss", 0.0), totals.get("tokens", 0.0), totals.get("clipped", 0.0)
    return Reply({"value_loss": loss_sum, "trainable_tokens": int(n_tokens), "clip_fraction": clipped / n_tokens if n_tokens else 0.0}, {"values": values_out})


@op("critic_optim_step")
def critic_optim_step(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """Same args as optim_step, applied to the critic's own AdamW."""
    cs = require_critic(state)
    h = adamw_args(args)
    if cs.optim is None:
        cs.optim = OptimState(cs.critic, torch.optim.AdamW(cs.critic.parameters(), lr=0.0, betas=h.betas, eps=h.eps, weight_decay=0.0))
    distributed.sync_grads(state.settings.dist, cs.critic)
    return adamw_step(cs.optim, h)


@op("critic_save")
def critic_save(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    cs = require_critic(state)
    save_critic(cs.critic, Path(args.req_str("dir")))
    return Reply(describe(cs))


@op("critic_load")
def critic_load(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    critic = load_critic(Path(args.req_str("dir")), state.settings.device)
    state.extensions["critic"] = CriticState(critic.eval())
    return Reply(describe(state.extensions["critic"]))
