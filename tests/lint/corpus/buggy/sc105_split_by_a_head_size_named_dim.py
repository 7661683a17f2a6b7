"""The same attention splitting its queries' features as (heads, q_len, head size) straight from (batch, q_len,
features): the query positions are cut from the features (``self.dim`` is the head size by what it holds)."""
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
        query = query.view(batch_size, self.num_heads, q_len, self.dim).permute(1, 0, 2, 3)  # expect: SC105
        value = value.view(batch_size, v_len, self.num_heads, self.dim).permute(2, 0, 1, 3)
        query = query.contiguous().view(-1, q_len, self.dim)
        value = value.contiguous().view(-1, v_len, self.dim)
        score = torch.bmm(query, value.transpose(1, 2)) / self.dim ** 0.5
        attn = score.softmax(dim=-1)
        context = torch.bmm(attn, value)
        context = context.view(self.num_heads, batch_size, q_len, self.dim).permute(1, 2, 0, 3)
        return context.contiguous().view(batch_size, q_len, -1)
