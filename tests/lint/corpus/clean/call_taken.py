"""Calls their callee takes, in the shapes that look otherwise: the mask under xformers' own name, a keyword that
``**kwargs`` collects, a function the file defines twice (which one runs is not known), a class built through a
decorator, a kernel of the same name that the file defines itself, a method a subclass overrides, arguments spread
with ``*``/``**``, a stub that stands for an implementation registered elsewhere, a call a check writes to fail;
the buggy twin gives calls their callee refuses."""

import contextlib
import dataclasses

import torch
import torch.nn.functional as F
from torch import nn

try:
    import xformers.ops as xops
except ImportError:
    xops = None

try:
    from flash_attn import flash_attn_func
except ImportError:
    def flash_attn_func(q, k, v, causal=False, **unused):
        return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                              is_causal=causal).transpose(1, 2)


def pad_to_block(x, block, pad_value=0.0, **options):
    extra = (-x.shape[-2]) % block
    return F.pad(x, (0, 0, 0, extra), value=pad_value, **options)


if torch.cuda.is_available():
    def merge(t, heads):
        return t.flatten(-2)
else:
    def merge(t):
        return t.flatten(-2)


@dataclasses.dataclass
class Settings:
    heads: int
    block: int = 4


class Rotary(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        self.inv_freq = 1.0 / base ** (torch.arange(0, dim, 2).float() / dim)

    def forward(self, x, offset=0):
        t = torch.arange(offset, offset + x.shape[-2]).float()
        angles = torch.outer(t, self.inv_freq)
        return torch.cat([angles, angles], dim=-1)


class Attention(nn.Module):
    def __init__(self, dim, heads, block=4):
        super().__init__()
        self.settings = Settings(heads, block=block)
        self.heads, self.block = heads, block
        self.qkv = nn.Linear(dim, 3 * dim)
        self.rotary = Rotary(dim // heads)

    def split(self, x):
        b, n, _ = x.shape
        return self.qkv(x).view(b, n, 3, self.heads, -1).unbind(2)

    def forward(self, x, mask=None, use_xformers=False, use_flash=False):
        b, n, _ = x.shape
        q, k, v = self.split(x)
        if use_xformers:
            out = xops.memory_efficient_attention(q, k, v, attn_bias=mask)
            return out.reshape(b, n, -1)
        if use_flash:
            return flash_attn_func(q, k, v, causal=True, window_size=(-1, -1)).reshape(b, n, -1)
        q, k, v = (pad_to_block(t.transpose(1, 2), self.block, pad_value=0.0, mode="constant") for t in (q, k, v))
        angles = self.rotary(q, *[0])
        q = q * angles.cos()
        out = F.scaled_dot_product_attention(q, k, v, **{"is_causal": False})[:, :, :n]
        return out.transpose(1, 2).reshape(b, n, -1)


class GroupedAttention(Attention):
    def split(self, x, groups=1):
        return super().split(x)

    def grouped(self, x):
        return self.split(x, groups=2)


def fused_stub(q):
    """Stands for a compiled kernel registered under this name elsewhere."""


def assert_raises(kind):
    return contextlib.suppress(kind)


def misuse_is_refused(q):
    with assert_raises(TypeError):
        pad_to_block(q)
    return fused_stub(q, q, q)
