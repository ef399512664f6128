"""The Qwen2/Qwen3 dense decoder, with parameters named exactly as in Hugging Face checkpoints.

Differences between the two layouts (see ModelConfig): qwen2 has q/k/v biases; qwen3 has per-head RMSNorm on q and k
(before RoPE) and biases only when `attention_bias`. Attention takes an explicit boolean mask [B, N, N] (True = may
attend), so the same code runs causal rows and packed prefix trees. Numerics follow the HF reference: RMSNorm and
softmax in float32, cos/sin computed in float32 and cast to the activation dtype.
"""
from __future__ import annotations

from typing import Dict, Optional, Sequence, Union

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .config import ModelConfig
from .segments import KeptQueries, SegmentPlan, kept_segment_attention, segment_attention

AttentionMask = Union[torch.Tensor, SegmentPlan]
HAS_SDPA: bool = hasattr(F, "scaled_dot_product_attention")
EAGER_QUERY_BLOCK = 1024
# "auto": segment attention over packed trees (segments.py) in the worker's batched paths, SDPA/eager where a dense
# mask is given. "eager"/"sdpa" force the dense-mask path everywhere (kept for parity tests and accelerators).
ATTENTION_IMPLS = ("auto", "eager", "sdpa")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        # At least float32 (HF upcasts half precision); float64 stays float64 for gradient checks.
        h = x.to(torch.promote_types(dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class RotaryEmbedding(nn.Module):
    """Non-interleaved RoPE (HF `rotate_half` convention); positions are explicit so tree depths work.

    The inverse frequencies are recomputed per call in float32 (float64 for float64 models) rather than kept as a
    buffer, so casting the model to bfloat16 cannot round them.
    """

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        self.head_dim = head_dim
        self.theta = theta

    def forward(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        ft = torch.promote_types(dtype, torch.float32)
        exponent = torch.arange(0, self.head_dim, 2, dtype=torch.int64, device=positions.device).to(ft) / self.head_dim
        inv_freq = 1.0 / (self.theta ** exponent)
        freqs = positions.to(ft)[..., None] * inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        # [B, 1, N, head_dim] to broadcast over heads.
        return emb.cos().to(dtype)[:, None], emb.sin().to(dtype)[:, None]


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.num_heads = cfg.num_attention_heads
        self.num_kv_heads = cfg.num_key_value_heads
        self.head_dim = cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden_size, self.num_heads * self.head_dim, bias=cfg.qkv_bias)
        self.k_proj = nn.Linear(cfg.hidden_size, self.num_kv_heads * self.head_dim, bias=cfg.qkv_bias)
        self.v_proj = nn.Linear(cfg.hidden_size, self.num_kv_heads * self.head_dim, bias=cfg.qkv_bias)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, cfg.hidden_size, bias=cfg.o_bias)
        self.q_norm: Optional[RMSNorm] = RMSNorm(self.head_dim, cfg.rms_norm_eps) if cfg.qk_norm else None
        self.k_norm: Optional[RMSNorm] = RMSNorm(self.head_dim, cfg.rms_norm_eps) if cfg.qk_norm else None

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: AttentionMask, use_sdpa: bool, kept: Optional[KeptQueries] = None) -> torch.Tensor:
        """`mask` is [B, 1, N, N]: boolean (True = attend) for SDPA, an additive bias (0 / dtype min) for eager; or a
        SegmentPlan over B = 1 concatenated rows (segments.py). With `kept` (segment plans only) queries are formed
        only at those positions and the output is [1, K, H]."""
        b, n, _ = x.shape
        xq, cq, sq = (x, cos, sin) if kept is None else (x[:, kept.index], cos[:, :, kept.index], sin[:, :, kept.index])
        q = self.q_proj(xq).view(b, xq.shape[1], self.num_heads, self.head_dim)
        k = self.k_proj(x).view(b, n, self.num_kv_heads, self.head_dim)
        v = self.v_proj(x).view(b, n, self.num_kv_heads, self.head_dim)
        if self.q_norm is not None and self.k_norm is not None:
            q = self.q_norm(q)
            k = self.k_norm(k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q = q * cq + rotate_half(q) * sq
        k = k * cos + rotate_half(k) * sin
        rep = self.num_heads // self.num_kv_heads
        if rep > 1:
            # Query head h reads key/value head h // rep (HF repeat_kv order).
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        if kept is not None:
            if not isinstance(mask, SegmentPlan):
                raise ValueError("kept queries need a segment plan")
            out = kept_segment_attention(q[0], k[0], v[0], mask, kept, self.head_dim ** -0.5)[None]
            return self.o_proj(out.transpose(1, 2).reshape(b, xq.shape[1], self.num_heads * self.head_dim))
        if isinstance(mask, SegmentPlan):
            out = segment_attention(q[0], k[0], v[0], mask, self.head_dim ** -0.5)[None]
        elif use_sdpa:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            # Query blocks bound the transient [B, heads, block, N] score tensors on long rows; results are identical.
            kt = k.transpose(-1, -2)
            parts = []
            for s in range(0, n, EAGER_QUERY_BLOCK):
                scores = torch.matmul(q[:, :, s : s + EAGER_QUERY_BLOCK], kt) * (self.head_dim ** -0.5) + mask[:, :, s : s + EAGER_QUERY_BLOCK]
                probs = torch.softmax(scores, dim=-1, dtype=torch.promote_types(scores.dtype, torch.float32)).to(q.dtype)
                parts.append(torch.matmul(probs, v))
            out = parts[0] if len(parts) == 1 else torch.cat(parts, dim=2)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, self.num_heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: AttentionMask, use_sdpa: bool, kept: Optional[KeptQueries] = None) -> torch.Tensor:
        """[B, N, H] → [B, N, H]; with `kept`, → [1, K, H] at the kept positions only (keys still read every position)."""
        attn = self.self_attn(self.input_layernorm(x), cos, sin, mask, use_sdpa, kept)
        x = (x if kept is None else x[:, kept.index]) + attn
        return x + self.mlp(self.post_attention_layernorm(x))


class DecoderModel(nn.Module):
    """HF's `model.` prefix: embeddings, layers, final norm."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList([DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers)])
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(cfg.head_dim, cfg.rope_theta)


class CausalLM(nn.Module):
    """`Qwen2ForCausalLM` / `Qwen3ForCausalLM`: state_dict keys are the HF checkpoint names."""

    def __init__(self, cfg: ModelConfig, attention: str = "auto") -> None:
        super().__init__()
        if attention not in ATTENTION_IMPLS:
            raise ValueError(f"attention must be one of {ATTENTION_IMPLS}")
        if attention == "sdpa" and not HAS_SDPA:
            raise ValueError("attention=sdpa needs torch >= 2.0")
        self.config = cfg
        self.attention = attention
        self.model = DecoderModel(cfg)
        self.lm_head: Optional[nn.Linear] = None if cfg.tie_word_embeddings else nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        # Recompute each layer in backward instead of storing its activations (long rows under gradient).
        self.gradient_checkpointing = False
        # The rows the engines sample from (vocab.py, restrict_vocab): logits cover rows [0, sampled_rows) only, and
        # the ids in `textless` below that are masked out. Plain attributes, not buffers: never saved.
        self.sampled_rows = cfg.vocab_size
        self.textless: Optional[torch.Tensor] = None

    def restrict_vocab(self, textless: Sequence[int]) -> None:
        """Excludes ids without text from every softmax: a trailing run of them (padded rows) is cut off the output
        projection, which is also cheaper; any others (holes) are masked in the logits (packed.mask_textless)."""
        ids = sorted({int(i) for i in textless if 0 <= int(i) < self.config.vocab_size})
        rows = self.config.vocab_size
        while ids and ids[-1] == rows - 1:
            ids.pop()
            rows -= 1
        if rows == 0:
            raise ValueError("no vocabulary row has text")
        self.sampled_rows = rows
        self.textless = torch.tensor(ids, dtype=torch.long) if ids else None

    def use_sdpa(self, device: torch.device) -> bool:
        if self.attention == "auto":
            # SDPA's fused kernels pay off on accelerators; on CPU the eager path is as fast for tiny models and exact.
            return HAS_SDPA and device.type != "cpu"
        return self.attention == "sdpa"

    def output_weight(self) -> torch.Tensor:
        """The output projection's rows the engines sample from ([sampled_rows, H]; all rows unless restricted)."""
        w = self.model.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
        return w if self.sampled_rows == w.shape[0] else w[: self.sampled_rows]

    def hidden_states(self, input_ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Final-norm hidden states [B, N, H] for token ids [B, N], positions [B, N] and mask [B, N, N]."""
        x = self.model.embed_tokens(input_ids)
        cos, sin = self.model.rotary_emb(positions, x.dtype)
        sdpa = self.use_sdpa(x.device)
        allowed = mask[:, None]
        # Eager attention adds the mask as a bias; building it once saves a masked_fill per layer.
        attn_mask = allowed if sdpa else torch.zeros(allowed.shape, dtype=x.dtype, device=x.device).masked_fill_(~allowed, torch.finfo(x.dtype).min)
        for layer in self.model.layers:
            if self.gradient_checkpointing and torch.is_grad_enabled():
                x = checkpoint(layer, x, cos, sin, attn_mask, sdpa, use_reentrant=False)
            else:
                x = layer(x, cos, sin, attn_mask, sdpa)
        return self.model.norm(x)

    def hidden_states_planned(self, input_ids: torch.Tensor, positions: torch.Tensor, plan: SegmentPlan, keep: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Final-norm hidden states [T, H] for rows concatenated into token ids [T] and positions [T], attention
        restricted to each token's tree path by `plan` (segments.py) instead of a dense mask.

        `keep` (sorted unique indices into the T tokens): only those hidden states are needed, so the last layer
        forms queries, attention output and MLP only there; the other rows of the result are zeros. On a long prompt
        with a short scored tail this removes most of the last layer (half of a 2-layer model's attention)."""
        x = self.model.embed_tokens(input_ids[None])
        cos, sin = self.model.rotary_emb(positions[None], x.dtype)
        kept = None if keep is None else plan.kept_queries(keep)
        last = len(self.model.layers) - 1
        for i, layer in enumerate(self.model.layers):
            k = kept if i == last else None
            if k is not None and k.index.numel() == 0:
                return x.new_zeros(x.shape[1], x.shape[2])
            if self.gradient_checkpointing and torch.is_grad_enabled():
                x = checkpoint(layer, x, cos, sin, plan, False, k, use_reentrant=False)
            else:
                x = layer(x, cos, sin, plan, False, k)
        h = self.model.norm(x)[0]
        if kept is None:
            return h
        return h.new_zeros(int(input_ids.shape[0]), h.shape[1]).index_copy(0, kept.index.to(h.device), h)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.linear(hidden, self.output_weight())

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def init_weights(model: CausalLM, seed: int, std: float = 0.02) -> None:
    """Seeded init independent of device and module order: N(0, std) matrices/embeddings, ones for norms, zero biases."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif name.endswith(".bias"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * std)


def hf_state_dict(model: CausalLM) -> Dict[str, torch.Tensor]:
    """Tensors under HF names (no lm_head when tied, no rotary buffers). A LoRA-adapted projection (lora.py) gives its
    merged weight W + (alpha / r) · B A and no adapter tensors: what is saved is the policy as engines serve it."""
    out = {k: v for k, v in model.state_dict().items() if not k.endswith("rotary_emb.inv_freq") and ".lora_" not in k}
    for name, module in model.named_modules():
        merged = getattr(module, "merged_weight", None)
        if callable(merged):
            out[f"{name}.weight"] = merged()
    return out
