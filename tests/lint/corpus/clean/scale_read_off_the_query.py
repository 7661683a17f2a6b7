"""The scaled dot product of a multi-head attention whose heads are folded into the batch, (batch*heads, seq, E):
E is read off the query's own last axis, so it is one head's size, and 1/√E is the right scale whatever the letter.
muP's 1/E (the size itself, not its root) is read off the same axis: a deliberate scale by the head size."""

import math

import torch
import torch.nn.functional as F


def scaled_dot_product(q, k, v, attn_mask=None):
    B, Nt, E = q.shape
    q = q / math.sqrt(E)
    attn = torch.bmm(q, k.transpose(-2, -1)) if attn_mask is None else torch.baddbmm(attn_mask, q, k.transpose(-2, -1))
    return torch.bmm(F.softmax(attn, dim=-1), v)


def mup_scaled_dot_product(q, k, v):
    batch_heads, length, E = q.shape
    q = q / E  # muP: 1/d instead of 1/sqrt(d), so that the logits stay O(1) as the width grows
    return torch.bmm(F.softmax(torch.bmm(q, k.transpose(-2, -1)), dim=-1), v)


def multi_head(x, w_qkv, heads):
    b, n, d = x.shape
    q, k, v = (x @ w_qkv).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, n, heads, d // heads).transpose(1, 2).reshape(b * heads, n, d // heads) for t in (q, k, v))
    out = scaled_dot_product(q, k, v)
    return out.reshape(b, heads, n, d // heads).transpose(1, 2).reshape(b, n, d)
