"""ALiBi for a decoder with a key/value cache: the bias has a row for each query, the last seq_q positions of the
keys when new queries attend cached keys."""

import torch
from torch import nn


class ALiBi(nn.Module):
    def __init__(self, heads):
        super().__init__()
        slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
        self.register_buffer("slopes", slopes.view(heads, 1, 1))

    def forward(self, scores):
        # scores: (batch, heads, seq_q, seq_k)
        q_len, k_len = scores.shape[-2:]
        positions = torch.arange(k_len - q_len, k_len).view(q_len, 1)  # each query's position among the keys
        distance = positions - torch.arange(k_len).view(1, k_len)  # (seq_q, seq_k)
        bias = -distance.clamp(min=0).to(scores.dtype) * self.slopes  # (heads, seq_q, seq_k)
        return scores + bias
