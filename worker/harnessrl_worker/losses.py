"""Token-level policy-gradient loss with truncated / masked importance sampling (REFERENCE §2, issue 7).

Three logprobs meet per sampled token:
  logp  — the current policy (differentiable),
  prox  — the policy the update is anchored to (PPO "old"): the trainer's own logprobs before this update; for a
          single on-policy step it equals logp.detach(),
  old   — what the inference engine reported when it sampled the token (π_infer).
PPO ratio r = exp(logp - prox) is clipped to [1 - clip_low, 1 + clip_high]. The engine/trainer mismatch is corrected
with w = min(exp(prox - old), tis_cap) (truncated IS) or by dropping tokens whose exp(prox - old) leaves
[mask_low, mask_high] (masked IS). Token loss = -w · min(r·A, clip(r)·A) - entropy_coef · H; the batch loss is
Σ lossWeight · trainable · token loss, so the TypeScript side chooses the aggregation (token mean, sequence mean,
prompt-equal) through the weights.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

import torch

from .errors import bad_request


@dataclass
class PGLossConfig:
    clip_low: float = 0.2
    clip_high: float = 0.2
    # "truncate" (TIS), "mask" (MIS) or "none".
    is_mode: str = "truncate"
    tis_cap: float = 2.0
    mask_low: float = 0.5
    mask_high: float = 2.0
    entropy_coef: float = 0.0
    # KL penalty to a reference policy (needs the `ref_logprobs` frame): kl_coef · k3(π_ref ‖ π).
    kl_coef: float = 0.0

    def validate(self) -> "PGLossConfig":
        if self.is_mode not in ("truncate", "mask", "none"):
            raise bad_request("loss.is_mode must be truncate, mask or none")
        if self.clip_low < 0 or self.clip_high < 0 or self.tis_cap <= 0 or not 0 <= self.mask_low <= self.mask_high:
            raise bad_request("loss clip/IS bounds are out of range")
        return self


@dataclass
class TokenLoss:
    """Per-token loss (already multiplied by weight × trainable) and summed statistics over trainable tokens."""

    loss: torch.Tensor
    stats: Dict[str, float]


def pg_token_loss(
    logp: torch.Tensor,
    entropy: torch.Tensor,
    prox: Optional[torch.Tensor],
    old: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    trainable: torch.Tensor,
    cfg: PGLossConfig,
    ref: Optional[torch.Tensor] = None,
) -> TokenLoss:
    mask = trainable.to(torch.bool)
    anchor = logp.detach() if prox is None else prox
    ratio = torch.exp(logp - anchor)
    clipped = ratio.clamp(1.0 - cfg.clip_low, 1.0 + cfg.clip_high)
    surrogate = torch.minimum(ratio * advantages, clipped * advantages)
    behaviour = torch.exp(anchor - old).detach()
    if cfg.is_mode == "truncate":
        is_weight = behaviour.clamp(max=cfg.tis_cap)
        is_limited = behaviour > cfg.tis_cap
    elif cfg.is_mode == "mask":
        keep = (behaviour >= cfg.mask_low) & (behaviour <= cfg.mask_high)
        is_weight = keep.to(logp.dtype)
        is_limited = ~keep
    else:
        is_weight = torch.ones_like(behaviour)
        is_limited = torch.zeros_like(mask)
    per_token = -is_weight * surrogate
    if cfg.entropy_coef != 0:
        # Only then does the entropy enter the graph: its backward (a pass over every logit) is skipped otherwise.
        per_token = per_token - cfg.entropy_coef * entropy
    ref_kl = torch.zeros_like(logp)
    if ref is not None:
        # k3 = exp(ref - logp) - (ref - logp) - 1 ≥ 0: an unbiased, low-variance per-token KL(π ‖ π_ref) estimate.
        d = ref - logp
        ref_kl = torch.exp(d) - d - 1.0
        per_token = per_token + cfg.kl_coef * ref_kl
    w = weights * mask.to(weights.dtype)
    loss = per_token * w
    with torch.no_grad():
        n = int(mask.sum())
        delta = (anchor - old)[mask].abs()
        log_r = (anchor - old)[mask]
        # k3 estimator of KL(π_infer ‖ π_train) from tokens sampled by π_infer: r - 1 - log r, r = π_train/π_infer.
        k3 = torch.exp(log_r) - 1.0 - log_r
        clip_active = ((ratio < 1.0 - cfg.clip_low) & (advantages < 0)) | ((ratio > 1.0 + cfg.clip_high) & (advantages > 0))
        stats = {
            "tokens": float(n),
            "loss": float(loss.sum()),
            "mismatch_abs_sum": float(delta.sum()),
            "mismatch_abs_max": float(delta.max()) if n else 0.0,
            "kl_k3_sum": float(k3.sum()),
            "clipped": float(clip_active[mask].sum()),
            "is_limited": float(is_limited[mask].sum()),
            "entropy_sum": float(entropy.detach()[mask].sum()),
            "ratio_sum": float(ratio.detach()[mask].sum()),
            "nll_sum": float(-logp.detach()[mask].sum()),
            "ref_kl_sum": float(ref_kl.detach()[mask].sum()),
        }
    return TokenLoss(loss, stats)


def sft_token_loss(logp: torch.Tensor, entropy: torch.Tensor, weights: torch.Tensor, trainable: torch.Tensor) -> TokenLoss:
    """Supervised fine-tuning (e.g. on oracle demonstrations): weighted negative log-likelihood of trainable tokens."""
    mask = trainable.to(torch.bool)
    loss = -logp * weights * mask.to(weights.dtype)
    with torch.no_grad():
        stats = {
            "tokens": float(mask.sum()),
            "loss": float(loss.sum()),
            "nll_sum": float(-logp.detach()[mask].sum()),
            "entropy_sum": float(entropy.detach()[mask].sum()),
        }
    return TokenLoss(loss, stats)
