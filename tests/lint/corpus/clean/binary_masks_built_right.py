"""The twins of the 0/1 masks used as numbers: the bias is built in the scores' dtype before a large negative goes
in, a boolean mask goes to SDPA as a boolean, a float bias takes -1e9 per sample, padding becomes a bias by a
product with a large negative, booleans are inverted with ~. A 0/1 mask that multiplies probabilities is right."""

import torch
import torch.nn.functional as F
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, attn_mask=None):
        """attn_mask: (seq, seq), True where a query may not attend to a key, or a float bias."""
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) * self.scale
        if attn_mask is not None:
            if attn_mask.dtype == torch.bool:
                bias = torch.zeros_like(attn_mask, dtype=x.dtype)
                bias.masked_fill_(attn_mask, -1e8 if x.dtype == torch.float32 else -1e4)
                attn_mask = bias
            scores = scores + attn_mask
        out = scores.softmax(dim=-1) @ v
        return self.out(out.transpose(1, 2).reshape(b, n, -1))


def core_attention(q, k, v, attention_mask):
    """attention_mask: (batch, 1, q_len, k_len), True where a key must not be attended."""
    return F.scaled_dot_product_attention(q, k, v, ~attention_mask)


def glm_core_attention(query, key, value, attention_mask):
    """attention_mask: True where a key must not be attended."""
    causal_mask = torch.zeros_like(attention_mask, dtype=torch.float32)
    causal_mask.masked_fill_(attention_mask, float("-inf"))
    return F.scaled_dot_product_attention(query, key, value, causal_mask)


class CrossAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)

    def forward(self, x, cond, lengths):
        """lengths: how many of the condition's tokens each sample has (the rest is padding)."""
        b, n, _ = x.shape
        q = self.q(x).view(b, n, self.heads, -1).transpose(1, 2)
        k, v = self.kv(cond).view(b, cond.shape[1], 2, self.heads, -1).permute(2, 0, 3, 1, 4)
        bias = torch.zeros(b, n, k.shape[2], dtype=torch.float32, device=x.device)
        for i, m in enumerate(lengths):
            bias[i, :, m:] = -1e9
        scores = q @ k.transpose(-2, -1) * self.scale
        scores = scores + bias.unsqueeze(1)
        return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, -1)


def encoder_scores(q, k, ids, pad_id=0):
    keep = (ids != pad_id).float()
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / q.shape[-1] ** 0.5
    return scores + (1.0 - keep)[:, None, None, :] * -10000.0


def masked_scores(scores, ids, pad_id=0):
    valid = ids != pad_id
    bias = (~valid)[:, None, None, :] * -10000.0
    return scores + bias


def attend(scores, lengths):
    pad = torch.arange(scores.shape[-1], device=scores.device)[None, :] >= lengths[:, None]
    scores = scores.masked_fill(pad, float("-inf"))
    return scores.softmax(dim=-1)


def gated(scores, values, ids, pad_id=0):
    keep = (ids != pad_id).float()
    probs = scores.softmax(dim=-1) * keep[:, None, None, :]
    return probs @ values


def causal_scores(q, k):
    n = q.shape[-2]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool, device=q.device), diagonal=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return scores.masked_fill(future, float("-inf"))
