"""A mask of 0 and 1 used as an additive bias: added to the scores, or handed to SDPA as a float mask, it shifts
the kept (or the masked) scores by 1 and masks nothing (the shapes of real fixes: a boolean mask inverted and cast
to float32 for SDPA, a boolean bias tensor given -1e9 per sample and added, a padding mask cast to float)."""

import torch
import torch.nn.functional as F
from torch import nn


def glm_core_attention(query, key, value, attention_mask):
    """attention_mask: True where a key must not be attended."""
    attention_mask = ~attention_mask
    return F.scaled_dot_product_attention(
        query, key, value, attention_mask.to(torch.float32)  # expect: SC176
    )


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
        bias = torch.zeros(b, n, k.shape[2], dtype=torch.bool, device=x.device)
        for i, m in enumerate(lengths):
            bias[i, :, m:] = -1e9  # expect: SC175
        scores = q @ k.transpose(-2, -1) * self.scale
        scores = scores + bias.unsqueeze(1)  # expect: SC176
        return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, -1)


def encoder_scores(q, k, ids, pad_id=0):
    keep = (ids != pad_id).float()
    scores = torch.einsum("bhid,bhjd->bhij", q, k) / q.shape[-1] ** 0.5
    return scores + keep[:, None, None, :]  # expect: SC176


def causal_scores(q, k):
    n = q.shape[-2]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool, device=q.device), diagonal=1)
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    return scores + future  # expect: SC176
