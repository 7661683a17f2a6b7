"""A tutorial's attention: one Head module per head in a ModuleList, embed_size and head_size in the constructor."""
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, embed_size, head_size, dropout):
        super().__init__()
        self.key = nn.Linear(embed_size, head_size, bias=False)
        self.query = nn.Linear(embed_size, head_size, bias=False)
        self.value = nn.Linear(embed_size, head_size, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        k, q, v = self.key(x), self.query(x), self.value(x)  # (B, T, hs)
        wei = q @ k.transpose(-2, -1) * k.size(-1) ** -0.5  # (B, T, T)
        if mask is not None:
            wei = wei.masked_fill(~mask[:, None, :], torch.finfo(wei.dtype).min)
        return self.dropout(wei.softmax(dim=-1)) @ v  # (B, T, hs)


class MultiHeadAttention(nn.Module):
    def __init__(self, embed_size, num_heads, head_size, dropout=nn.Dropout(0.1)):
        super().__init__()
        self.heads = nn.ModuleList(Head(embed_size, head_size, dropout.p) for _ in range(num_heads))
        self.proj = nn.Linear(num_heads * head_size, embed_size)

    def forward(self, x, mask=None):
        return self.proj(torch.cat([h(x, mask) for h in self.heads], dim=-1))  # (B, T, embed_size)
