"""A model trained without the 1/sqrt(d_head) scaling (GPT-Neo's attention) run through SDPA (in the style of a
BetterTransformer wrapper): the queries are multiplied by sqrt(d_head) first, which cancels the kernel's default
scale. Multiplying by a root undoes a scaling; it is not a second one."""

from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class UnscaledSelfAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim, bias=False)
        self.scale = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float32)).to(torch.get_default_dtype())

    def forward(self, x: torch.Tensor, attention_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q = q * self.scale
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, is_causal=attention_mask is None)
        return out.transpose(1, 2).reshape(b, t, c)
