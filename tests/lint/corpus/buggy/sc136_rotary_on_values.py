"""Self-attention whose rotary module rotates every tensor it is handed; the layer hands it the values as well as
the queries and keys, so what each query averages depends on where each value sits."""

import torch
import torch.nn.functional as F
from torch import nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, d_head, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, d_head, 2).float() / d_head))

    def forward(self, **tensors):
        seq = next(iter(tensors.values())).shape[-2]
        freqs = torch.outer(torch.arange(seq, dtype=self.inv_freq.dtype), self.inv_freq)
        cos, sin = torch.cat((freqs, freqs), dim=-1).cos(), torch.cat((freqs, freqs), dim=-1).sin()
        return tuple(t * cos + rotate_half(t) * sin for t in tensors.values())


class RotarySelfAttention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.rotary = RotaryEmbedding(d_model // heads)

    def forward(self, x):
        b, n, _ = x.shape
        qkv = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)  # (3, batch, heads, seq, d_head)
        q, k, v = qkv.unbind(0)
        q, k, v = self.rotary(q=q, k=k, v=v)  # expect: SC136
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (batch, heads, seq, d_head)
        return self.out(out.transpose(1, 2).reshape(b, n, -1))
