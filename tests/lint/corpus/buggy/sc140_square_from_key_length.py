"""ALiBi for a decoder with a key/value cache: the bias is built key length by key length from the scores it is
added to, so when new queries attend cached keys (scores [batch, heads, seq_q, seq_k] with seq_q < seq_k) the rows
are those of the first positions, or the sum broadcasts to [batch, heads, seq_k, seq_k]."""

import torch
from torch import nn


class ALiBi(nn.Module):
    def __init__(self, heads):
        super().__init__()
        slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
        self.register_buffer("slopes", slopes.view(heads, 1, 1))

    def forward(self, scores):
        # scores: (batch, heads, seq_q, seq_k)
        k_len = scores.shape[-1]
        distance = torch.arange(k_len).view(k_len, 1) - torch.arange(k_len).view(1, k_len)  # (seq_k, seq_k)
        bias = -distance.clamp(min=0).to(scores.dtype) * self.slopes  # (heads, seq_k, seq_k)
        return scores + bias  # expect: SC140
