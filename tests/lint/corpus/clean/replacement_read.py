"""The stand-in is what the code reads: a default mask built from the pad id, a mask cast to the activations'
dtype; values merely computed from a parameter and left unread are not stand-ins."""

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
        attn_mask = default(attn_mask, lambda: token_ids != pad_id)
        x = self.embed(token_ids)
        return self.layer(x, src_key_padding_mask=~attn_mask.bool())


class Pooler(nn.Module):
    def forward(self, hidden, attention_mask):
        weights = attention_mask.to(hidden.dtype)
        num_patches = hidden.shape[1] // 2
        return (hidden * weights.unsqueeze(-1)).sum(1) / attention_mask.sum(1, keepdim=True)
