"""A text encoder that accepts a mask or a pad id: the mask built from the pad id is stored under a new name that
nothing reads, and the encoder gets the parameter, None when only the pad id was given (padding attended)."""

import torch
from torch import nn


def default(value, fallback):
    return value if value is not None else fallback()


class TextEncoder(nn.Module):
    def __init__(self, dim, vocab, heads=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layer = nn.TransformerEncoderLayer(dim, heads, batch_first=True)

    def forward(self, token_ids, attn_mask=None, pad_id=None):
        mask = default(attn_mask, lambda: token_ids != pad_id)  # expect: SC168
        x = self.embed(token_ids)
        keep = attn_mask.bool() if attn_mask is not None else None
        return self.layer(x, src_key_padding_mask=None if keep is None else ~keep)


class Pooler(nn.Module):
    def forward(self, hidden, attention_mask):
        weights = attention_mask.to(hidden.dtype)  # expect: SC168
        return (hidden * attention_mask.unsqueeze(-1)).sum(1) / attention_mask.sum(1, keepdim=True)
