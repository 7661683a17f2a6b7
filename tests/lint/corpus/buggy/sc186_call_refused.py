"""Calls their callee cannot take, each a TypeError on its path: the mask given to xformers under SDPA's name
(sd-webui-text2video 67aaba9f), a misspelt keyword to a function of the file, an extra positional argument to the
module ``__init__`` built, a required setting left out of a class built by name."""

import torch
import torch.nn.functional as F
from torch import nn

try:
    import xformers.ops as xops
except ImportError:
    xops = None


def pad_to_block(x, block, pad_value=0.0):
    extra = (-x.shape[-2]) % block
    return F.pad(x, (0, 0, 0, extra), value=pad_value)


class Rotary(nn.Module):
    def __init__(self, dim, base):
        super().__init__()
        self.inv_freq = 1.0 / base ** (torch.arange(0, dim, 2).float() / dim)

    def forward(self, x, offset=0):
        t = torch.arange(offset, offset + x.shape[-2]).float()
        angles = torch.outer(t, self.inv_freq)
        return torch.cat([angles, angles], dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, heads, block=4):
        super().__init__()
        self.heads, self.block = heads, block
        self.qkv = nn.Linear(dim, 3 * dim)
        self.rotary = Rotary(dim // heads, 10000.0)

    def forward(self, x, mask=None, use_xformers=False):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).unbind(2)
        if use_xformers:
            out = xops.memory_efficient_attention(q, k, v, mask=mask)  # expect: SC186
            return out.reshape(b, n, -1)
        q, k, v = (pad_to_block(t.transpose(1, 2), self.block, pad_val=0.0) for t in (q, k, v))  # expect: SC186
        angles = self.rotary(q, 0, n)  # expect: SC186
        q = q * angles.cos()
        out = F.scaled_dot_product_attention(q, k, v)[:, :, :n]
        return out.transpose(1, 2).reshape(b, n, -1)


class Encoder(nn.Module):
    def __init__(self, dim, heads, depth):
        super().__init__()
        self.layers = nn.ModuleList([Attention(dim, heads) for _ in range(depth)])
        self.rotary = Rotary(dim // heads)  # expect: SC186

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x
