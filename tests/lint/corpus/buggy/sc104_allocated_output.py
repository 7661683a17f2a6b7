"""Windowed attention that writes each window's output into a buffer from torch.zeros, laid out (B, heads, T,
d_head), then merges the heads with a reshape that never moves them next to the head size."""

import torch
import torch.nn.functional as F
from torch import nn


class WindowedSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, window):
        super().__init__()
        self.n_head = n_head
        self.d_head = d_model // n_head
        self.window = window
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, self.d_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, self.d_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, self.d_head).transpose(1, 2)
        out = torch.zeros(B, self.n_head, T, self.d_head, dtype=x.dtype, device=x.device)
        for start in range(0, T, self.window):
            end = min(start + self.window, T)
            out[:, :, start:end] = F.scaled_dot_product_attention(q[:, :, start:end], k[:, :, start:end],
                                                                  v[:, :, start:end])
        return self.out(out.reshape(B, T, C))  # expect: SC104
