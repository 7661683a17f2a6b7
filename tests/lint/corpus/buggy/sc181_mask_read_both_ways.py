"""One boolean mask read with two meanings: the fused path gives it to scaled_dot_product_attention, which attends
where a boolean attn_mask is True, and the path that returns the weights fills the scores where it is True. Whatever
the mask holds, one of the two paths attends to the positions the other masks out."""

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
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        if not return_weights:
            return out
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        scores = scores.masked_fill(mask, float("-inf"))  # expect: SC181
        return out, scores.softmax(dim=-1)


def masked_scores(scores, keep):
    """``keep``: True where a key may be attended."""
    allowed = keep[:, None, :]
    probs = torch.where(allowed, scores, torch.finfo(scores.dtype).min).softmax(-1)
    scores.masked_fill_(allowed, float("-inf"))  # expect: SC181
    return probs, scores
