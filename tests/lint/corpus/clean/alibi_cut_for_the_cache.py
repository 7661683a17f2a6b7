"""ALiBi built square from the key length, then cut to the last row when the queries (one new token over a
cache) are fewer than the keys: both lengths are read, so the code knows they may differ."""

import torch
from torch import nn


class Alibi(nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.register_buffer("slopes", torch.ones(heads))

    def forward(self, x):
        seq_len_q = x.shape[-2]
        seq_len_k = x.shape[-1]
        a = -torch.tril(torch.arange(seq_len_k, device=x.device).view(seq_len_k, 1).repeat(1, seq_len_k))
        a = a.to(x.dtype) * self.slopes.view(-1, 1, 1)
        if seq_len_q != seq_len_k:
            a = a[:, seq_len_k - 1, :].view(a.shape[0], 1, a.shape[2])
        return x + a
