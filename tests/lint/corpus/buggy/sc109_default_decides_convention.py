"""A project whose key_padding_mask is True where a key may be attended, as its own default says (all True:
nothing is padded); the eager path fills the mask itself, i.e. the keys that may be attended."""

import math

import torch
from torch import nn


def flash_path(query, key, value, key_padding_mask=None):
    if key_padding_mask is None:
        key_padding_mask = torch.ones_like(key[:, :, 0], dtype=torch.bool)
    lengths = key_padding_mask.sum(dim=-1)
    return query, key, value, lengths


def eager_path(query, key, value, n_heads, key_padding_mask=None):
    b, s_q, d = query.shape
    s_k = key.size(1)
    q = query.view(b, s_q, n_heads, d // n_heads).transpose(1, 2)
    k = key.view(b, s_k, n_heads, d // n_heads).permute(0, 2, 3, 1)
    v = value.view(b, s_k, n_heads, d // n_heads).transpose(1, 2)
    scores = q.matmul(k) / math.sqrt(d // n_heads)
    if key_padding_mask is not None:
        scores = scores.masked_fill(key_padding_mask.view(b, 1, 1, s_k), torch.finfo(q.dtype).min)  # expect: SC109
    weights = torch.softmax(scores, dim=-1)
    return weights.matmul(v).transpose(1, 2).reshape(b, s_q, d)


class Attention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.wqkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x, key_padding_mask=None):
        q, k, v = self.wqkv(x).chunk(3, dim=-1)
        return eager_path(q, k, v, self.n_heads, key_padding_mask)
