"""One boolean mask read one way throughout: negated where the reader takes True as the other meaning."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class LabelAttention(nn.Module):
    def __init__(self, dim, heads, num_labels):
        super().__init__()
        self.heads, self.d_head = heads, dim // heads
        self.labels = nn.Embedding(num_labels, dim)
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)

    def forward(self, tokens, padding, return_weights=False):
        b, t, d = tokens.shape
        labels = self.labels.weight.expand(b, -1, -1)
        q = self.q(labels).view(b, -1, self.heads, self.d_head).transpose(1, 2)
        k, v = self.kv(tokens).view(b, t, 2, self.heads, self.d_head).permute(2, 0, 3, 1, 4)
        mask = padding.bool()[:, None, None, :]  # True at the padding
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask)
        if not return_weights:
            return out
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        scores = scores.masked_fill(mask, float("-inf"))
        return out, scores.softmax(dim=-1)


def masked_scores(scores, keep):
    """``keep``: True where a key may be attended."""
    allowed = keep[:, None, :]
    probs = torch.where(allowed, scores, torch.finfo(scores.dtype).min).softmax(-1)
    scores.masked_fill_(~allowed, float("-inf"))
    return probs, scores


def stored_again(scores, q, k, v, padding):
    mask = padding.bool()
    scores = scores.masked_fill(mask, float("-inf"))
    mask = ~mask
    return scores, F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def additive_from_keep(bias, keep, dtype):
    if keep.dtype == torch.bool:  # the keep mask becomes an additive one, stored under its own name
        keep = torch.where(keep, torch.tensor(0.0, dtype=dtype), torch.finfo(dtype).min)
    return bias.masked_fill(keep != 0, torch.finfo(dtype).min)
