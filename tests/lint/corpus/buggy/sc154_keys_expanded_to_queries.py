"""Single-headed keys and values broadcast over the heads by expanding them to the queries' whole shape: the key
length becomes the query length, which fails (or drops keys) when memory key/values or a cache make the keys
longer than the queries."""

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn


class Attend(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.dropout = dropout

    def forward(self, q, k, v, mask=None):
        if k.ndim == 3:
            k = rearrange(k, "b ... -> b 1 ...").expand_as(q)  # expect: SC154
        if v.ndim == 3:
            v = rearrange(v, "b ... -> b 1 ...").expand_as(q)  # expect: SC154
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                              dropout_p=self.dropout if self.training else 0.0)


class MultiQueryAttention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.Wq = nn.Linear(d_model, d_model)
        self.Wkv = nn.Linear(d_model, 2 * self.d_head)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, past_key_value=None):
        b, t, d = x.shape
        q = self.Wq(x).view(b, t, self.n_heads, self.d_head).transpose(1, 2)
        k, v = self.Wkv(x).view(b, t, 1, 2 * self.d_head).transpose(1, 2).chunk(2, dim=-1)
        if past_key_value is not None:
            k = torch.cat([past_key_value[0], k], dim=2)
            v = torch.cat([past_key_value[1], v], dim=2)
        k = k.expand(*q.shape)  # expect: SC154
        scores = q @ k.transpose(-2, -1) / self.d_head ** 0.5
        attn = scores.softmax(dim=-1)
        out = torch.einsum("bhij,bhjd->bhid", attn, v)
        return self.out_proj(out.transpose(1, 2).reshape(b, t, d)), (k, v)
