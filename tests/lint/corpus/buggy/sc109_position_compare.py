"""Causal masks built by comparing query and key positions, filled the wrong way round."""

import torch
from einops import rearrange, repeat


def local_image_attention(q, k, v, text_keep, heads):
    # in the style of a real fix: query >= key is the past (True = keep), concatenated after the text padding
    # mask and filled as if it were the future
    n = q.shape[-2]
    scores = torch.einsum("b i d, b j d -> b i j", q, k)
    q_pos = rearrange(torch.arange(n), "i -> () i ()")
    k_pos = rearrange(torch.arange(n), "j -> () () j")
    causal = q_pos >= k_pos
    mask = repeat(text_keep, "b j -> (b h) i j", h=heads, i=n)
    mask = torch.cat((~mask, causal.expand(mask.shape[0], -1, -1)), dim=-1)
    scores = torch.cat((scores, scores), dim=-1)
    scores.masked_fill_(mask, -torch.finfo(scores.dtype).max)  # expect: SC109
    return scores.softmax(dim=-1)


def positions_on_rows(scores):
    i = torch.arange(scores.shape[-2])
    j = torch.arange(scores.shape[-1])
    visible = i[:, None] >= j[None, :]
    scores = scores.masked_fill(visible, float("-inf"))  # expect: SC109
    return torch.softmax(scores, dim=-1)
