"""Rotary tables grown on demand: forward rebuilds the complex table for a long input but drops the cos and sin
tables the same call returns, so the kernel path keeps reading the short ones."""

import torch
from torch import nn


def rotary_tables(dim, max_len=2048, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
    angles = torch.outer(torch.arange(max_len).float(), inv_freq)
    rope = torch.polar(torch.ones_like(angles), angles)
    return rope, angles.cos(), angles.sin()


class RotaryAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.rope, self.cos, self.sin = rotary_tables(self.head_dim)

    def forward(self, x, start_pos=0):
        seq_len = x.size(1)
        if start_pos + seq_len > self.rope.size(0):
            self.rope, _, _ = rotary_tables(self.head_dim, max_len=start_pos + seq_len + 2048)  # expect: SC169
        cos = self.cos[start_pos:start_pos + seq_len]
        sin = self.sin[start_pos:start_pos + seq_len]
        return x, cos, sin
