"""Causal masks built by comparing query and key positions, each filled on the future: key after query
(masked), or query >= key (keep) negated; a comparison of two positions that are neither."""

import torch
from einops import rearrange, repeat


def local_image_attention(q, k, v, text_keep, heads):
    n = q.shape[-2]
    scores = torch.einsum("b i d, b j d -> b i j", q, k)
    q_pos = rearrange(torch.arange(n), "i -> () i ()")
    k_pos = rearrange(torch.arange(n), "j -> () () j")
    causal = q_pos < k_pos
    mask = repeat(text_keep, "b j -> (b h) i j", h=heads, i=n)
    mask = torch.cat((~mask, causal.expand(mask.shape[0], -1, -1)), dim=-1)
    scores = torch.cat((scores, scores), dim=-1)
    scores.masked_fill_(mask, -torch.finfo(scores.dtype).max)
    return scores.softmax(dim=-1)


def positions_on_rows(scores):
    i = torch.arange(scores.shape[-2])
    j = torch.arange(scores.shape[-1])
    visible = i[:, None] >= j[None, :]
    scores = scores.masked_fill(~visible, float("-inf"))
    return torch.softmax(scores, dim=-1)


def window(scores, start, stop):
    outside = start > stop
    scores = scores.masked_fill(outside, float("-inf"))
    return torch.softmax(scores, dim=-1)


def chosen_in_a_branch(scores, flip):
    q_pos = torch.arange(scores.shape[-2])[:, None]
    k_pos = torch.arange(scores.shape[-1])[None, :]
    causal = q_pos >= k_pos
    if flip:
        causal = ~causal  # reassigned in a branch: the convention at the fill is not known, so nothing is said
    scores = scores.masked_fill(causal, float("-inf"))
    return torch.softmax(scores, dim=-1)
