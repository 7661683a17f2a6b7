"""Padding taken off with a slice to ``-pad``: when the length is a multiple of the block already, ``pad`` is 0 and
``[:-0]`` keeps nothing (daydreamlive/scope 2a1c0261, flex attention's output padded to a multiple of 128)."""

import math

import torch.nn.functional as F


def blocked_attention(q, k, v, block=4):
    """q, k, v: (batch, heads, seq, d_head), padded on seq to a multiple of ``block`` for a blocked kernel."""
    pad = math.ceil(q.shape[-2] / block) * block - q.shape[-2]
    q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v)
    return out[:, :, :-pad]  # expect: SC187


def chunked_keys(k, chunk=4):
    extra = (-k.shape[-2]) % chunk
    k = F.pad(k, (0, 0, 0, extra))
    chunks = k.unflatten(-2, (-1, chunk))
    return chunks.flatten(-3, -2)[..., :-extra, :]  # expect: SC187
