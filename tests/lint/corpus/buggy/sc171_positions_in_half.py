"""Windowed attention whose window mask compares positions made in the queries' dtype: under float16 (or
bfloat16) autocast, positions past 2048 (256) round together and the window lets the wrong keys in."""

import torch
from torch import nn


class WindowAttention(nn.Module):
    def __init__(self, dim, window):
        super().__init__()
        self.window = window
        self.to_qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        b, t, e, device, dtype = *q.shape, q.device, q.dtype
        pos = torch.arange(t, device=device, dtype=dtype)  # expect: SC171
        query_pos, key_pos = pos[:, None], pos[None, :]
        outside = (key_pos > query_pos) | (key_pos < query_pos - self.window)
        sim = torch.einsum("bid,bjd->bij", q, k) * (e ** -0.5)
        sim = sim.masked_fill(outside, torch.finfo(sim.dtype).min)
        return sim.softmax(dim=-1) @ v
