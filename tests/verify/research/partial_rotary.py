"""Attention that rotates a quarter of each head, written for these tests in the conventions of litgpt and
GPT-NeoX: a config with ``rotary_percentage``, the cos and sin tables passed as two arguments of width
``rope_n_elem``, and ``input_pos`` meaning decoding through a cache (which this module builds only on request)."""
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Config:
    n_embd: int = 64
    n_head: int = 4
    rotary_percentage: float = 0.25

    @property
    def head_size(self) -> int:
        return self.n_embd // self.n_head

    @property
    def rope_n_elem(self) -> int:
        return int(self.rotary_percentage * self.head_size)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half RoPE of (batch, heads, seq, n_elem) by (batch, seq, n_elem) tables."""
    half = x.size(-1) // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos.unsqueeze(1) + rotated * sin.unsqueeze(1)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        self.attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        self.kv_cache: Optional[tuple[torch.Tensor, torch.Tensor]] = None

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: Optional[torch.Tensor] = None,
                input_pos: Optional[torch.Tensor] = None) -> torch.Tensor:
        B, T, C = x.size()
        n_elem = self.config.rope_n_elem
        q, k, v = (t.view(B, T, self.config.n_head, -1).transpose(1, 2) for t in self.attn(x).split(C, dim=2))
        q = torch.cat((apply_rope(q[..., :n_elem], cos, sin), q[..., n_elem:]), dim=-1)
        k = torch.cat((apply_rope(k[..., :n_elem], cos, sin), k[..., n_elem:]), dim=-1)
        if input_pos is not None:
            if self.kv_cache is None:
                raise TypeError("You need to call `gpt.set_kv_cache()`")
            cached_k, cached_v = self.kv_cache
            k, v = cached_k.index_copy(2, input_pos, k), cached_v.index_copy(2, input_pos, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))
