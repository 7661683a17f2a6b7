"""Names bound on every path that reads them, in the shapes that look otherwise: a loop's name read after the
loop, a name bound late in a loop and read on the next pass, a try whose handler binds it too, a ``while True`` left
only by ``return``, an ``elif`` chain with no ``else`` (exhaustive by design), conditions that go together (``if x``
then ``if not x: return``), a read under the condition that bound it, a walrus, a branch that never runs (``if
False:``), an ``else`` written to stop (``assert NotImplementedError(...)``, the debugger), an import inside a nested
function (its own name); the buggy twin reads names no path binds."""

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
        out = F.softmax(q @ k.transpose(-1, -2) / d ** 0.5, dim=-1) @ v
    return out


class GroupedBlock(nn.Module):
    def __init__(self, dim, heads, kv_heads=0, mode="mha"):
        super().__init__()
        if kv_heads == 0:
            groups = heads
        else:
            assert heads % kv_heads == 0
            groups = kv_heads
        if mode == "mha":
            width = dim
        elif mode == "mqa":
            width = dim // heads
        self.head_dim = dim // heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * groups * self.head_dim + 0 * width)


class TwoStreamEncoder(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, text, image=None, return_weights=False, steps=(1,)):
        if image is not None:
            outputs = self.attn(text, image, image)
            weights = outputs[1]
        else:
            outputs = self.attn(text, text, text)
        prev = None
        for step in steps:
            if prev is not None:
                text = text + prev
            prev = text * step
        try:
            import numpy
            scale = 1.0
        except ImportError:
            scale = 1.0
        while True:
            width = text.shape[-1]
            if width:
                break
        if image is not None:
            text = text + weights.mean() * 0
        if (n := len(steps)) > 1:
            text = text * n
        out = outputs[0] * scale + text * 0 + prev * 0 + width * 0
        return (out, weights) if return_weights and image is not None else out


def prepare(tokens, noise, return_loss=True, mode="fp", layout="flat"):
    import math

    def cleanup():
        import gc
        gc.collect()

    if return_loss:
        flow = tokens - noise
    else:
        tokens = tokens + noise
    if False:  # mode == "int8"
        out = tokens
    else:
        out, extra = tokens * math.sqrt(2), noise
    if layout == "flat":
        shaped = out.flatten(1)
    else:
        assert NotImplementedError(f"layout {layout}")
    if mode == "fp":
        dtype = out.dtype
    else:
        import pdb
        pdb.set_trace()
    cleanup()
    if not return_loss:
        return shaped.to(dtype), extra
    return F.mse_loss(shaped, flow.flatten(1)), extra


def rotated_decode_step(q, k, v, rotary=None, use_rotary=True):
    """The default skips the ``if`` that binds cos and sin, and the ``else`` binds them too; a flag whose default
    runs its ``if`` leaves nothing unbound on the default call."""
    if rotary is not None:
        cos, sin = rotary
    else:
        cos, sin = torch.ones(()), torch.zeros(())
    if use_rotary:
        rotated = q * cos + q.flip(-1) * sin
    q = rotated if use_rotary else q
    return F.scaled_dot_product_attention(q, k, v)
