"""Single-head attention (in the style of MobileViT's): no head count anywhere in the class, so the width is the
one head's size and scaling by its root is the usual 1/sqrt(d_k)."""

from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class SingleHeadAttention(nn.Module):
    def __init__(self, embed_dim: int, attn_dropout: float = 0.0):
        super().__init__()
        self.qkv_proj = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.attn_dropout = nn.Dropout(attn_dropout)
        self.softmax = nn.Softmax(dim=-1)
        self.embed_dim = embed_dim
        self.scaling = self.embed_dim ** -0.5

    def forward(self, x_q: torch.Tensor, x_kv: Optional[torch.Tensor] = None) -> torch.Tensor:
        if x_kv is None:
            query, key, value = torch.chunk(self.qkv_proj(x_q), chunks=3, dim=-1)
        else:
            query = F.linear(x_q, self.qkv_proj.weight[: self.embed_dim], self.qkv_proj.bias[: self.embed_dim])
            kv = F.linear(x_kv, self.qkv_proj.weight[self.embed_dim :], self.qkv_proj.bias[self.embed_dim :])
            key, value = torch.chunk(kv, chunks=2, dim=-1)
        query = query * self.scaling
        key = key.transpose(-2, -1)
        attn = self.attn_dropout(self.softmax(torch.matmul(query, key)))
        return self.out_proj(torch.matmul(attn, value))
