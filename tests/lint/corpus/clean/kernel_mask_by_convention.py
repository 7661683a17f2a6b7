"""Boolean masks given to scaled_dot_product_attention as the positions that may attend."""

import torch.nn.functional as F
from torch import nn


class Pooler(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, attention_mask):
        """
        Args:
            x: (batch, seq, dim) token states.
            attention_mask: (batch, seq), 1 for real tokens, 0 for padding.
        """
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        real = attention_mask == 1
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=real[:, None, None, :])
        return out.transpose(1, 2).reshape(b, t, d)


def padded_keys(q, k, v, ids, pad_id):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=(ids != pad_id)[:, None, None, :])


def additive(q, k, v, padding):
    bias = (padding == 0) * 0.0  # a float mask is added, not read as booleans
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
