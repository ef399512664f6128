"""The PPO critic: a decoder trunk of the policy's architecture plus a scalar value head.

Values are aligned with logprobs: the value for token i is read from the hidden state at parent[i] — the state in
which token i was chosen — so GAE on the TypeScript side pairs V(s_i) with the action token i. Roots get 0.
A critic directory is a model directory whose config carries `"harnessrl_critic": true`; its weights use the HF trunk
names (`model.*`) plus `value_head.weight` / `value_head.bias` (no output head: the trunk's LM head is unused).
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Dict, Optional

import torch
from torch import nn

from . import safetensors as st
from .config import ModelConfig
from .errors import invalid_model
from .model import CausalLM, hf_state_dict, init_weights
from .modeldir import read_config, write_json_atomic
from .packed import PackedRow

VALUE_HEAD = ("value_head.weight", "value_head.bias")


class Critic(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        # Tied so that no separate (unused) LM head is allocated or saved.
        self.config = replace(cfg, tie_word_embeddings=True)
        self.trunk = CausalLM(self.config)
        self.value_head = nn.Linear(cfg.hidden_size, 1)

    def values(self, hidden: torch.Tensor, row: PackedRow) -> torch.Tensor:
        """V for every token of one row from the trunk's hidden states [N, H] (differentiable)."""
        parent = row.parent.to(hidden.device)
        child = torch.nonzero(parent >= 0).flatten()
        dtype = torch.float64 if hidden.dtype == torch.float64 else torch.float32
        out = torch.zeros(row.length, dtype=dtype, device=hidden.device)
        if child.numel() == 0:
            return out
        v = self.value_head(hidden[parent[child]]).squeeze(-1).to(dtype)
        return out.index_put((child,), v)

    def tensors(self) -> Dict[str, torch.Tensor]:
        out = hf_state_dict(self.trunk)
        out["value_head.weight"] = self.value_head.weight.detach()
        out["value_head.bias"] = self.value_head.bias.detach()
        return out


def critic_from_policy(policy: CausalLM) -> Critic:
    """The usual PPO start: the trunk copies the policy's weights, the value head starts at zero."""
    critic = Critic(policy.config)
    with torch.no_grad():
        policy_tensors = hf_state_dict(policy)
        for name, t in hf_state_dict(critic.trunk).items():
            t.copy_(policy_tensors[name])
        critic.value_head.weight.zero_()
        critic.value_head.bias.zero_()
    return critic.to(next(policy.parameters()).device)


def critic_from_seed(cfg: ModelConfig, seed: int) -> Critic:
    critic = Critic(cfg)
    init_weights(critic.trunk, seed)
    with torch.no_grad():
        critic.value_head.weight.zero_()
        critic.value_head.bias.zero_()
    return critic


def save_critic(critic: Critic, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    st.save_file({k: v.detach().to(torch.float32) for k, v in critic.tensors().items()}, out / "model.safetensors")
    cfg = critic.config.to_hf()
    cfg["harnessrl_critic"] = True
    write_json_atomic(out / "config.json", cfg)


def load_critic(directory: Path, device: torch.device, dtype: Optional[torch.dtype] = None) -> Critic:
    cfg_raw = json.loads((directory / "config.json").read_text("utf-8")) if (directory / "config.json").exists() else {}
    if not cfg_raw.get("harnessrl_critic"):
        raise invalid_model(f"{directory} is not a critic directory (config.json lacks harnessrl_critic)")
    critic = Critic(read_config(directory))
    tensors = st.load_checkpoint(directory)
    expected = critic.tensors()
    missing = [n for n in expected if n not in tensors]
    if missing:
        raise invalid_model(f"{directory}: critic checkpoint lacks {missing[:8]}")
    with torch.no_grad():
        for name, t in hf_state_dict(critic.trunk).items():
            t.copy_(tensors[name])
        critic.value_head.weight.copy_(tensors["value_head.weight"])
        critic.value_head.bias.copy_(tensors["value_head.bias"])
    return critic.to(device=device, dtype=dtype or torch.float32)
