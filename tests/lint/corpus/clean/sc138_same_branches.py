"""Attention with a muP option: under muP the scores are scaled by 1/d_head instead of 1/sqrt(d_head)."""

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class AttentionConfig:
    d_model: int = 64  # model width
    heads: int = 4  # attention heads
    use_mup: bool = False  # muP: scale the scores by 1/d_head


class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.heads = config.heads
        self.d_head = config.d_model // config.heads
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model)
        self.out = nn.Linear(config.d_model, config.d_model)
        if config.use_mup:
            self.norm_factor = self.d_head
        else:
            self.norm_factor = math.sqrt(self.d_head)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.d_head).permute(2, 0, 3, 1, 4)  # (batch, heads, seq, d_head)
        scores = q @ k.transpose(-2, -1) / self.norm_factor  # (batch, heads, seq, seq)
        out = scores.softmax(dim=-1) @ v  # (batch, heads, seq, d_head)
        return self.out(out.transpose(1, 2).reshape(b, n, -1))
