"""Heads split with a count whose name says nothing (``nb_heads``), and the scale read off the query before the
split: the projection's last axis is the width, so the scores are scaled by 1/√d_model. The clean twin
(clean/head_size_read_off_a_split.py) reads it off the split query."""

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
        q, k, v = self.q_weights(x), self.k_weights(x), self.v_weights(x)
        scale = math.sqrt(q.size(-1))
        q, k, v = (t.view(batch_size, seq_len, self.nb_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-2, -1)) / scale  # expect: SC103
        weights = torch.softmax(scores + alibi, dim=-1)
        return torch.matmul(weights, v).transpose(1, 2).reshape(batch_size, seq_len, embedding_dim)
