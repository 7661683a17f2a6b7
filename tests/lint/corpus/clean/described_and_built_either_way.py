"""What a mask's description or a choice made in ``__init__`` leaves unchanged: a dead store of the probabilities'
type name (no mask computed for nothing), a fill value spelled out the same for each case of a flag, and branches
that call alike a submodule ``__init__`` built one way or the other (a mixture of experts or a dense MLP)."""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, d_model, heads, num_experts=0, exact_softmax=False):
        super().__init__()
        self.heads, self.d_head = heads, d_model // heads
        self.num_experts, self.exact_softmax = num_experts, exact_softmax
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        if num_experts > 0:
            self.feed_forward = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(num_experts))[0]
        else:
            self.feed_forward = nn.Linear(d_model, d_model)
        if self.exact_softmax:
            self.fill = -10000.0
        else:
            self.fill = -10000.0

    def forward(self, x, attention_mask):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, self.d_head).permute(2, 0, 3, 1, 4)  # (batch, heads, seq, d_head)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (batch, heads, seq, seq)
        scores = scores.masked_fill(~attention_mask[:, None, None, :], self.fill)
        probs = scores.softmax(dim=-1)
        previous_type = probs.type()
        h = x + self.out((probs @ v).transpose(1, 2).reshape(b, n, -1))
        if self.num_experts > 0:
            out = h + self.feed_forward(h)
        else:
            out = h + self.feed_forward(h)
        return out
