"""Positions made as integers for the window mask; a float grid in the activations' dtype that is only scaled,
never compared; lengths' own (integer) dtype for a padding mask."""

import torch
from torch import nn


class WindowAttention(nn.Module):
    def __init__(self, dim, window):
        super().__init__()
        self.window = window
        self.to_qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, lengths):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        b, t, e, device, dtype = *q.shape, q.device, q.dtype
        pos = torch.arange(t, device=device, dtype=torch.long)
        query_pos, key_pos = pos[:, None], pos[None, :]
        outside = (key_pos > query_pos) | (key_pos < query_pos - self.window)
        ramp = torch.arange(t, device=device, dtype=dtype) / t
        padded = torch.arange(t, device=device, dtype=lengths.dtype)[None, :] >= lengths[:, None]
        sim = torch.einsum("bid,bjd->bij", q, k) * (e ** -0.5) + ramp
        sim = sim.masked_fill(outside | padded[:, None, :], torch.finfo(sim.dtype).min)
        return sim.softmax(dim=-1) @ v
