"""Masks made and then applied to nothing, in the shapes of real fixes: a bias that takes the padding mask and is
never handed to the kernel, a mask narrowed after the call that needed it. A default mask stored under a name nobody
reads while the call below gets the parameter (None) is SC168's, and reported once."""

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
                attn_bias = attn_bias.masked_fill(~mask, -torch.finfo(q.dtype).max)  # expect: SC173
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
        logits = self.transformer(ids, self_attn_mask=self_attn_mask)
        if self.mask_prob > 0 and self.training:
            self_attn_mask &= torch.rand(self_attn_mask.shape, device=ids.device) > self.mask_prob  # expect: SC173
        return logits


def encode(encoder, token_ids, attn_mask=None, pad_id=0):
    mask = attn_mask if attn_mask is not None else (token_ids != pad_id).long()  # expect: SC168
    return encoder(input_ids=token_ids, attention_mask=attn_mask)
