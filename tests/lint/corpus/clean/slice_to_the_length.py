"""Padding taken off in the shapes that keep every position when none was added: a slice up to the length, a cut
under a test of the padding, a path that returns first when there is none, a cut by a count that is a plain
difference of two lengths, whose sign the caller vouches for; the buggy twin slices to ``-pad`` with ``pad`` 0."""

import math

import torch.nn.functional as F


def blocked_attention(q, k, v, block=4):
    n = q.shape[-2]
    pad = math.ceil(n / block) * block - n
    q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v)
    return out[:, :, :n]


def chunked_keys(k, chunk=4):
    extra = (-k.shape[-2]) % chunk
    k = F.pad(k, (0, 0, 0, extra))
    chunks = k.unflatten(-2, (-1, chunk)).flatten(-3, -2)
    if extra > 0:
        chunks = chunks[..., :-extra, :]
    return chunks


def unpadded(out, block=4):
    pad = (block - out.shape[-2] % block) % block
    if pad == 0:
        return out
    return F.pad(out, (0, 0, 0, pad))[..., :-pad, :]


def trimmed(longer, shorter):
    surplus = longer.shape[-2] - shorter.shape[-2]
    return longer[..., :-surplus, :] if surplus else longer
