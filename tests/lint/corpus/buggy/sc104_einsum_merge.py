"""An einsum that leaves heads before the sequence, merged by a reshape as if it had not."""

import torch
from torch import nn


class EinsumAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, d_model)
        self.wv = nn.Linear(d_model, d_model)
        self.wo = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.n_heads, self.d_head)
        k = self.wk(x).view(b, t, self.n_heads, self.d_head)
        v = self.wv(x).view(b, t, self.n_heads, self.d_head)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / self.d_head ** 0.5
        probs = scores.softmax(dim=-1)
        out = torch.einsum("bhqk,bkhd->bhqd", probs, v)
        return self.wo(out.reshape(b, t, -1))  # expect: SC104
