"""Names read on a path that never binds them: each raises UnboundLocalError there, and pyflakes, which reads no
paths, says nothing. The head-split branch's q1/k1 copied into the other branch; an ``else`` that checks instead of
binding; a branch that binds a near-twin of the name the code below reads."""

import torch
import torch.nn.functional as F
from torch import nn


def chunked_attention(q, k, v, chunk=64):
    d = q.shape[-1]
    if d > chunk:
        out = 0
        for start in range(0, d, chunk):
            q1, k1 = q[..., start:start + chunk], k[..., start:start + chunk]
            out = out + F.softmax(q1 @ k1.transpose(-1, -2) / d ** 0.5, dim=-1) @ v
    else:
        out = F.softmax(q1 @ k.transpose(-1, -2) / d ** 0.5, dim=-1) @ v  # expect: SC183
    return out


class GroupedBlock(nn.Module):
    def __init__(self, dim, heads, kv_heads=0):
        super().__init__()
        if kv_heads == 0:
            groups = heads
        else:
            assert heads % kv_heads == 0
        self.head_dim = dim // heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * groups * self.head_dim)  # expect: SC183


class TwoStreamEncoder(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, text, image=None):
        if image is not None:
            encoded_outputs = self.attn(text, image, image)
        else:
            encoder_outputs = self.attn(text, text, text)
        return encoder_outputs[0]  # expect: SC183


def rotated_decode_step(q, k, v, rotary=None):
    """One decoding step; ``rotary`` holds (cos, sin) for a model with rotary positions. Left at its default, the
    ``if`` that binds cos and sin is skipped (eole 8acea5b2)."""
    if rotary is not None:
        cos, sin = rotary
    q = q * cos  # expect: SC183
    q = q + q.flip(-1) * sin  # expect: SC183
    return F.scaled_dot_product_attention(q, k, v)
