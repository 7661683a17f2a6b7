"""Heads laid out first for a batched matmul (in the style of a speech toolkit's multi-head location-aware
attention): ``self.dim`` holds ``int(hidden_dim / num_heads)``, the head size, whatever the name says, and the
(heads * batch) rows are split back in the order they were merged."""
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, hidden_dim, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        self.dim = int(hidden_dim / num_heads)
        self.query_proj = nn.Linear(hidden_dim, self.dim * num_heads)
        self.value_proj = nn.Linear(hidden_dim, self.dim * num_heads)

    def forward(self, query, value):
        batch_size, q_len, v_len = value.size(0), query.size(1), value.size(1)
        query = self.query_proj(query).view(batch_size, q_len, self.num_heads * self.dim)
        value = self.value_proj(value).view(batch_size, v_len, self.num_heads * self.dim)
        query = query.view(batch_size, q_len, self.num_heads, self.dim).permute(2, 0, 1, 3)
        value = value.view(batch_size, v_len, self.num_heads, self.dim).permute(2, 0, 1, 3)
        query = query.contiguous().view(-1, q_len, self.dim)
        value = value.contiguous().view(-1, v_len, self.dim)
        score = torch.bmm(query, value.transpose(1, 2)) / self.dim ** 0.5
        attn = score.softmax(dim=-1)
        context = torch.bmm(attn, value)
        context = context.view(self.num_heads, batch_size, q_len, self.dim).permute(1, 2, 0, 3)
        return context.contiguous().view(batch_size, q_len, -1)
