"""Heads split with a count whose name says nothing (``nb_heads``), and the scale read off the split query's last
axis: ``q.size(-1)`` is ``embedding_dim // nb_heads``, one head's size, so 1/√q.size(-1) is the right scale. The
buggy twin (buggy/sc103_width_read_off_the_input.py) reads it off the input, the width."""

import math

import torch
from torch import nn


class AlibiSelfAttention(nn.Module):
    def __init__(self, embedding_dim: int, nb_heads: int) -> None:
        super().__init__()
        self.nb_heads = nb_heads
        self.head_dim = embedding_dim // nb_heads
        self.q_weights = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.k_weights = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.v_weights = nn.Linear(embedding_dim, embedding_dim, bias=False)

    def forward(self, x: torch.Tensor, alibi: torch.Tensor) -> torch.Tensor:
        batch_size, seq_len, embedding_dim = x.shape
        q, k, v = (w(x).view(batch_size, seq_len, self.nb_heads, self.head_dim).transpose(1, 2)
                   for w in (self.q_weights, self.k_weights, self.v_weights))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        weights = torch.softmax(scores + alibi, dim=-1)
        return torch.matmul(weights, v).transpose(1, 2).reshape(batch_size, seq_len, embedding_dim)
