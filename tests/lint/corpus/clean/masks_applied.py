"""The twins of the masks applied to nothing: the filled bias becomes the kernel's mask, the structured dropout
narrows the mask before the call, and the default replaces the parameter the call reads. A mask read only on some
paths, and one kept for the caller, are used too."""

import torch
import torch.nn.functional as F
from torch import nn


class Attend(nn.Module):
    def __init__(self, causal=True):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v, mask=None, attn_bias=None):
        causal = self.causal
        if attn_bias is not None:
            if mask is not None:
                attn_bias = attn_bias.masked_fill(~mask, -torch.finfo(q.dtype).max)
            mask = attn_bias
            causal = False
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)


class Wrapper(nn.Module):
    def __init__(self, transformer, mask_prob=0.1, pad_id=0):
        super().__init__()
        self.transformer = transformer
        self.mask_prob = mask_prob
        self.pad_id = pad_id

    def forward(self, ids):
        self_attn_mask = ids != self.pad_id
        self_attn_mask = F.pad(self_attn_mask, (1, 0), value=True)
        if self.mask_prob > 0 and self.training:
            self_attn_mask &= torch.rand(self_attn_mask.shape, device=ids.device) > self.mask_prob
        return self.transformer(ids, self_attn_mask=self_attn_mask), self_attn_mask


def encode(encoder, token_ids, attn_mask=None, pad_id=0):
    attn_mask = attn_mask if attn_mask is not None else (token_ids != pad_id).long()
    out = None
    for _ in range(2):
        mask = attn_mask.bool()
        out = encoder(input_ids=token_ids, attention_mask=mask)
    return out


class RowAttention(nn.Module):
    """The mask is laid out for the attention, used, then laid back: the last transpose loses nothing."""

    def __init__(self, attention):
        super().__init__()
        self.attention = attention

    def forward(self, m, mask=None):
        m = m.transpose(-2, -3)
        if mask is not None:
            mask = mask.transpose(-1, -2)
        m = self.attention(m, mask=mask)
        m = m.transpose(-2, -3)
        if mask is not None:
            mask = mask.transpose(-1, -2)
        return m
