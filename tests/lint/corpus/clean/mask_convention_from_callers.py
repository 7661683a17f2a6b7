"""A retrieval encoder whose padding mask is built by the model as ``tokens != pad_id`` (True at the tokens) and
handed down through an encoder's layer loop to an attention that keeps where it is True (``~mask`` is filled).
The buggy twin builds it as ``tokens == pad_id``."""

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, heads=2, dim_head=4):
        super().__init__()
        self.heads, self.scale = heads, dim_head ** -0.5
        self.to_qkv = nn.Linear(dim, 3 * heads * dim_head, bias=False)
        self.to_out = nn.Linear(heads * dim_head, dim)

    def forward(self, x, mask=None):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        if mask is not None:
            mask = rearrange(mask, "b j -> b 1 1 j")
            sim = sim.masked_fill(~mask, -torch.finfo(sim.dtype).max)
        attn = sim.softmax(dim=-1)
        out = torch.einsum("b h i j, b h j d -> b h i d", attn, v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        return self.net(x)


class Encoder(nn.Module):
    def __init__(self, dim, depth=2):
        super().__init__()
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([Attention(dim), FeedForward(dim)]))

    def forward(self, x, *, mask=None):
        for attn, ff in self.layers:
            x = attn(x, mask=mask) + x
            x = ff(x) + x
        return x


class Retriever(nn.Module):
    def __init__(self, num_tokens, dim, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.encoder = Encoder(dim)

    def forward(self, tokens):
        mask = tokens != self.pad_id
        x = self.token_emb(tokens)
        return self.encoder(x, mask=mask)


def pooled(model, tokens):
    return F.normalize(model(tokens).mean(dim=1), dim=-1)
