"""A boolean mask that is True at the padding given to scaled_dot_product_attention, which attends where a boolean
attn_mask is True: every query attends to the padding alone."""

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
        padding = attention_mask == 0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=padding[:, None, None, :])  # expect: SC180
        return out.transpose(1, 2).reshape(b, t, d)


def padded_keys(q, k, v, ids, pad_id):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=(ids == pad_id)[:, None, None, :])  # expect: SC180
