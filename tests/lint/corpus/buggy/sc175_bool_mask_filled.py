"""A large negative written into a boolean mask: the tensor keeps its dtype, so the number is stored as True and
the "additive" mask that reaches the scores adds 1 where it should forbid (the shapes of real fixes: a boolean mask
filled with itself under a dtype test, a mask filled where its own inverse is set before a fused call)."""

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
                fill = -1e8 if x.dtype == torch.float32 else -1e4
                attn_mask = attn_mask.masked_fill(attn_mask, fill)  # expect: SC175
            scores = scores + attn_mask
        out = scores.softmax(dim=-1) @ v
        return self.out(out.transpose(1, 2).reshape(b, n, -1))


def core_attention(q, k, v, attention_mask):
    """attention_mask: (batch, 1, q_len, k_len), True where a key must not be attended."""
    attention_mask = attention_mask.masked_fill(~attention_mask, float("-inf"))  # expect: SC175
    return F.scaled_dot_product_attention(q, k, v, attention_mask)
