"""Heads computed one by one into a [heads, batch, seq, d_head] buffer, then viewed as (batch, seq, heads * d_head):
the view moves no data, so each example's row is made of the features of other examples and positions."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class LoopedHeads(nn.Module):
    def __init__(self, n_filters=32, n_heads=4):
        super().__init__()
        self.n_heads, self.key_dim = n_heads, n_filters // n_heads
        self.fc_query = nn.ModuleList([nn.Linear(n_filters, self.key_dim) for _ in range(n_heads)])
        self.fc_key = nn.ModuleList([nn.Linear(n_filters, self.key_dim) for _ in range(n_heads)])
        self.fc_value = nn.ModuleList([nn.Linear(n_filters, self.key_dim) for _ in range(n_heads)])
        self.fc_out = nn.Linear(n_filters, n_filters)

    def forward(self, x):
        batch_size, seq_len = x.shape[0], x.shape[1]
        heads = torch.zeros(self.n_heads, batch_size, seq_len, self.key_dim, device=x.device)
        for i in range(self.n_heads):
            q, k, v = self.fc_query[i](x), self.fc_key[i](x), self.fc_value[i](x)
            weights = F.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.key_dim), dim=-1)
            heads[i] = torch.bmm(weights, v)
        return self.fc_out(heads.view(batch_size, seq_len, -1))  # expect: SC112
