"""A view on the transposed attention output: PyTorch raises at run time."""

import math

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states):
        batch, seq, hidden_size = hidden_states.shape
        q = self.query(hidden_states).view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.key(hidden_states).view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.value(hidden_states).view(batch, seq, self.num_heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores, dim=-1)
        context = torch.matmul(probs, v).transpose(1, 2)  # (batch, seq, heads, d_head), not contiguous
        return context.view(batch, seq, hidden_size)  # expect: SC106
