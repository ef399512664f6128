"""`forward_backward` (accumulates gradients of the policy-gradient loss), `optim_step` (AdamW), `zero_grad`."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch.nn.utils.clip_grad import clip_grad_norm_

from .. import distributed
from ..errors import WorkerError, bad_request
from ..losses import PGLossConfig, TokenLoss, pg_token_loss, sft_token_loss
from ..memory import read_peak, start_peak
from ..packed import forward_micro_batches, score_tokens, split_rows, validate_row
from ..state import WorkerState
from .capo_ops import CapoAccumulator, freeze_outside_partitions, restore_outside_partitions
from .registry import Args, Reply, frame, op

# Float32 per-token frames each objective needs.
OBJECTIVE_FRAMES = {"pg": ("old_logprobs", "advantages", "loss_weights"), "sft": ("loss_weights",)}


def loss_config(raw: Any) -> PGLossConfig:
    if raw is None:
        return PGLossConfig()
    if not isinstance(raw, dict):
        raise bad_request("args.loss must be an object")
    cfg = PGLossConfig()
    for key, value in raw.items():
        if not hasattr(cfg, key):
            raise bad_request(f"unknown loss option {key!r}")
        expected = type(getattr(cfg, key))
        if expected is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            setattr(cfg, key, float(value))
        elif expected is str and isinstance(value, str):
            setattr(cfg, key, value)
        else:
            raise bad_request(f"loss.{key} must be a {expected.__name__}")
    return cfg.validate()


@op("forward_backward")
def forward_backward(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {row_lengths, objective? ("pg" | "sft"), temperature?, loss?: PGLossConfig fields}; frames: tokens,
    parent, positions (int32), trainable (uint8), loss_weights (float32), and for "pg" old_logprobs, advantages and
    optionally prox_logprobs and ref_logprobs (float32). Adds ∇(Σ lossWeight · trainable · token loss) to the parameters' gradients
    (call optim_step to apply). Returns summed statistics, peak memory of the step, and a `logprobs` frame (current policy before any update, at
    trainable tokens; 0 elsewhere).
    """
    loaded = state.require_model()
    model = loaded.model
    lengths = args.int_list("row_lengths")
    rows = split_rows(frame(frames, "tokens", torch.int32), frame(frames, "parent", torch.int32), frame(frames, "positions", torch.int32), lengths)
    total = sum(lengths)
    objective = args.opt_str("objective", "pg") or "pg"
    if objective not in OBJECTIVE_FRAMES:
        raise bad_request(f"objective must be one of {', '.join(OBJECTIVE_FRAMES)}")
    per_token: Dict[str, torch.Tensor] = {name: frame(frames, name, torch.float32) for name in OBJECTIVE_FRAMES[objective]}
    per_token["trainable"] = frame(frames, "trainable", torch.uint8)
    for optional in ("prox_logprobs", "ref_logprobs"):
        if objective == "pg" and optional in frames:
            per_token[optional] = frame(frames, optional, torch.float32)
    for name, t in per_token.items():
        if t.shape != (total,):
            raise bad_request(f"frame {name!r} must have one entry per token ({total})")
        if t.dtype == torch.float32 and not bool(torch.isfinite(t).all()):
            raise bad_request(f"frame {name!r} has non-finite values")
    for i, r in enumerate(rows):
        validate_row(r, loaded.config.vocab_size, loaded.config.max_position_embeddings, i)
    requested_t = args.opt_float("temperature")
    temperature = 1.0 if requested_t is None else requested_t
    if not temperature > 0:
        raise bad_request("temperature must be > 0")
    cfg = loss_config(args.raw.get("loss"))
    if cfg.kl_coef != 0 and "ref_logprobs" not in per_token:
        raise bad_request("loss.kl_coef needs the ref_logprobs frame (the reference policy's logprobs)")

    starts: List[int] = []
    acc = 0
    for n in lengths:
        starts.append(acc)
        acc += n
    # Rows without trainable tokens contribute nothing: skip their forward pass entirely.
    trainable_counts = [int(per_token["trainable"][starts[i] : starts[i] + r.length].sum()) for i, r in enumerate(rows)]
    every_active = [i for i in range(len(rows)) if trainable_counts[i] > 0]
    # Several ranks: this rank's share of the rows, balanced by trainable tokens (loss weights are global already).
    d = state.settings.dist
    active = distributed.my_rows(d, every_active, [trainable_counts[i] for i in every_active])
    logprobs_out = torch.zeros(total, dtype=torch.float32)
    sums: Dict[str, float] = {}
    maxes: Dict[str, float] = {}
    device = next(model.parameters()).device
    # CAPO: the loss restricted to action tokens and to args tokens get separate gradients, each masked to its partition.
    capo: Optional[CapoAccumulator] = None
    if args.opt_bool("capo", False):
        if loaded.lora is not None:
            raise bad_request("capo partitions full MLP weights; it does not apply to LoRA adapters")
        if objective != "pg":
            raise bad_request("capo applies to the pg objective")
        capo = CapoAccumulator.start(state, model, frame(frames, "action_mask", torch.uint8), frame(frames, "args_mask", torch.uint8), total)
    model.train()
    threshold = state.settings.grad_checkpoint_tokens
    # Attention memory grows with the row (dense mask) or with the longest path (segment attention).
    extent = (lambda r: int(r.positions.max()) + 1 if r.length else 0) if model.attention == "auto" else (lambda r: r.length)
    model.gradient_checkpointing = threshold > 0 and any(extent(rows[i]) >= threshold for i in active)
    # Long rows: attention probabilities are recomputed in backward, never stored (WorkerSettings.long_row_tokens).
    chunked = state.settings.chunked_logits
    long_at = state.settings.long_row_tokens
    long_rows = long_at > 0 and any(extent(rows[i]) >= long_at for i in every_active)
    # Only trainable tokens are scored on the chunked path, so the last layer runs only where they read it.
    scored: Optional[List[torch.Tensor]] = None
    if chunked and state.settings.prune_last_layer:
        scored = [per_token["trainable"][starts[i] : starts[i] + rows[i].length] for i in active]
    step_scoped = start_peak(device)
    try:
        for group, hidden in forward_micro_batches(model, [rows[i] for i in active], state.settings.token_budget, recompute=long_rows, needed=scored):
            losses: List[torch.Tensor] = []
            capo_losses: List[Tuple[torch.Tensor, torch.Tensor]] = []
            for b, k in enumerate(group):
                i = active[k]
                sl = slice(starts[i], starts[i] + rows[i].length)
                weights, train = per_token["loss_weights"][sl].to(device), per_token["trainable"][sl].to(device)
                # Only trainable tokens enter the loss and its statistics: the others need no output projection.
                lp, ent = score_tokens(model, hidden[b], rows[i], temperature, with_entropy=True, needed=train if chunked else None, recompute=chunked)
                # The reply's logprobs are the trainable tokens' on both paths (0 elsewhere).
                logprobs_out[sl] = torch.where(train.bool(), lp.detach(), torch.zeros_like(lp)).float().cpu()
                tl: TokenLoss
                if objective == "sft":
                    tl = sft_token_loss(lp, ent, weights, train)
                else:
                    prox = per_token["prox_logprobs"][sl].to(device) if "prox_logprobs" in per_token else None
                    ref = per_token["ref_logprobs"][sl].to(device) if "ref_logprobs" in per_token else None
                    tl = pg_token_loss(lp, ent, prox, per_token["old_logprobs"][sl].to(device), per_token["advantages"][sl].to(device), weights, train, cfg, ref)
                losses.append(tl.loss.sum())
                if capo is not None:
                    capo_losses.append(capo.split(tl.loss, sl))
                for key, value in tl.stats.items():
                    if key.endswith("_max"):
                        maxes[key] = max(maxes.get(key, 0.0), value)
                    else:
                        sums[key] = sums.get(key, 0.0) + value
            if capo is None:
                torch.stack(losses).sum().backward()
            else:
                capo.backward(torch.stack([a for a, _ in capo_losses]).sum(), torch.stack([g for _, g in capo_losses]).sum())
    finally:
        model.eval()
        model.gradient_checkpointing = False
    # Every rank filled its own rows: the reply is the sum (zeros elsewhere), the statistics are global.
    distributed.sum_tensor(d, logprobs_out)
    sums, maxes = distributed.reduce_stats(d, sums, maxes)
    if not math.isfinite(sums.get("loss", 0.0)):
        # A diverged batch must not leave poisoned gradients behind for the next optim_step.
        for p in model.parameters():
            p.grad = None
        raise WorkerError("non_finite_loss", "forward_backward produced a non-finite loss; gradients were cleared")
    capo_stats = capo.finish() if capo is not None else {}
    peak = read_peak(device, step_scoped)
    if distributed.active(d):
        peak.rss_mb = distributed.max_value(d, peak.rss_mb)
        if peak.cuda_mb is not None:
            peak.cuda_mb = distributed.max_value(d, peak.cuda_mb)
    n_tokens = sums.get("tokens", 0.0)

    def mean(key: str) -> float:
        return sums.get(key, 0.0) / n_tokens if n_tokens else 0.0

    result: Dict[str, Any] = {
        "objective": objective,
        "gradient_checkpointing": threshold > 0 and any(rows[i].length >= threshold for i in every_active),
        "trainable_tokens": int(n_tokens),
        "rows_forwarded": len(every_active),
        "loss": sums.get("loss", 0.0),
        "mismatch_abs_mean": mean("mismatch_abs_sum"),
        "mismatch_abs_max": maxes.get("mismatch_abs_max", 0.0),
        "kl_k3_mean": mean("kl_k3_sum"),
        "clip_fraction": mean("clipped"),
        "is_limited_fraction": mean("is_limited"),
        "entropy_mean": mean("entropy_sum"),
        "ratio_mean": mean("ratio_sum"),
        "nll_mean": mean("nll_sum"),
        "ref_kl_mean": mean("ref_kl_sum"),
        "long_rows": long_rows,
        "last_layer_pruned": scored is not None,
        "peak_rss_mb": peak.rss_mb,
        "peak_rss_step_scoped": peak.step_scoped,
    }
    if peak.cuda_mb is not None:
        result["cuda_peak_mb"] = peak.cuda_mb
    result.update(capo_stats)
    return Reply(result, {"logprobs": logprobs_out})


@dataclass
class OptimState:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    steps: int = 0


def optimizer_for(state: WorkerState, betas: tuple[float, float], eps: float) -> OptimState:
    """One AdamW per loaded model; loading or initialising another model starts a fresh optimizer."""
    model = state.require_model().model
    current: Optional[OptimState] = state.extensions.get("optim")
    if current is None or current.model is not model:
        # Frozen parameters (a LoRA base) get no optimizer state at all: that is LoRA's memory saving.
        current = OptimState(model, torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.0, betas=betas, eps=eps, weight_decay=0.0))
        state.extensions["optim"] = current
    return current


@op("optim_step")
def optim_step(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    """args: {lr, weight_decay? (0), beta1? (0.9), beta2? (0.999), eps? (1e-8), max_grad_norm? (1.0; 0 = no clipping),
    reset? ("first_moment" | "all")}. Resets the moments when asked (reset_moments), clips the accumulated gradient,
    applies AdamW, zeroes gradients. A non-finite gradient skips the update (a requested reset still happened).
    """
    reset = args.opt_str("reset")
    if reset is not None and reset not in RESETS:
        raise bad_request(f"args.reset must be one of {', '.join(RESETS)}")
    h = adamw_args(args)
    opt = optimizer_for(state, h.betas, h.eps)
    reset_count = None if reset is None else reset_moments(opt, reset)
    distributed.sync_grads(state.settings.dist, opt.model)
    if not args.opt_bool("capo", False):
        reply = adamw_step(opt, h)
    else:
        model = state.require_model().model
        before = freeze_outside_partitions(state, model)
        reply = adamw_step(opt, h)
        reply.result["capo_held_entries"] = restore_outside_partitions(state, model, before)
    if reset_count is not None:
        reply.result["reset_parameters"] = reset_count
    return reply


RESETS = ("first_moment", "all")


def reset_moments(opt: OptimState, which: str) -> int:
    """Before a step: "first_moment" zeroes exp_avg and keeps exp_avg_sq and AdamW's step count, so the new gradients
    enter the first moment exactly as they would have without the reset (same bias correction, same second moment)
    and only the old direction is gone: e.g. RL continuing a warm start's optimizer no longer continues SFT's last
    updates. "all" drops the state: the next step is a fresh AdamW's (its first update moves every weight by about
    lr). Resetting the second moment alone is not offered: its bias correction shares the step count with the first
    moment's. Returns the number of parameters whose state was reset (0 for an optimizer that has not stepped yet)."""
    state = opt.optimizer.state
    count = len(state)
    if which == "all":
        state.clear()
    else:
        for entry in state.values():
            entry["exp_avg"].zero_()
    return count


@dataclass
class AdamWArgs:
    lr: float
    weight_decay: float
    betas: tuple[float, float]
    eps: float
    max_grad_norm: float


def adamw_args(args: Args) -> AdamWArgs:
    lr = args.opt_float("lr")
    if lr is None or lr < 0:
        raise bad_request("args.lr must be a non-negative number")
    beta1 = args.opt_float("beta1", 0.9)
    beta2 = args.opt_float("beta2", 0.999)
    eps = args.opt_float("eps", 1e-8)
    wd = args.opt_float("weight_decay", 0.0)
    max_norm = args.opt_float("max_grad_norm", 1.0)
    assert beta1 is not None and beta2 is not None and eps is not None and wd is not None and max_norm is not None
    if not (0 <= beta1 < 1 and 0 <= beta2 < 1 and eps > 0 and wd >= 0 and max_norm >= 0):
        raise bad_request("AdamW hyper-parameters out of range")
    return AdamWArgs(lr, wd, (beta1, beta2), eps, max_norm)


def adamw_step(opt: "OptimState", h: AdamWArgs) -> Reply:
    """Clip, step, clear: shared by the policy's and the critic's optimizers."""
    params = [p for p in opt.model.parameters() if p.grad is not None]
    if not params:
        return Reply({"skipped": True, "reason": "no gradients", "grad_norm": 0.0, "step": opt.steps})
    norm = float(clip_grad_norm_(params, h.max_grad_norm if h.max_grad_norm > 0 else float("inf")))
    if not math.isfinite(norm):
        opt.optimizer.zero_grad(set_to_none=True)
        return Reply({"skipped": True, "reason": "non-finite gradient", "grad_norm": None, "step": opt.steps})
    for group in opt.optimizer.param_groups:
        group.update(lr=h.lr, weight_decay=h.weight_decay, betas=h.betas, eps=h.eps)
    opt.optimizer.step()
    opt.optimizer.zero_grad(set_to_none=True)
    opt.steps += 1
    return Reply({"skipped": False, "grad_norm": norm, "step": opt.steps})


@op("zero_grad")
def zero_grad(state: WorkerState, args: Args, frames: Dict[str, torch.Tensor]) -> Reply:
    for p in state.require_model().model.parameters():
        p.grad = None
    return Reply({})
