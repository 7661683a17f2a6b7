"""Attention whose projections have names no table lists; ``Scaled`` scales by √d_model (a bug only the reference sees)."""
from torch import nn


class Attention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.make_q, self.make_k, self.make_v, self.mix = (nn.Linear(d_model, d_model) for _ in range(4))

    def scale(self, d_model):
        return self.d_head ** -0.5

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (f(x).view(b, t, self.n_heads, self.d_head).transpose(1, 2) for f in (self.make_q, self.make_k, self.make_v))
        probs = (q @ k.transpose(-2, -1) * self.scale(c)).softmax(dim=-1)  # (b, h, t, t)
        return self.mix((probs @ v).transpose(1, 2).reshape(b, t, c))


class Scaled(Attention):
    def scale(self, d_model):
        return d_model ** -0.5  # BUG: √d_model, not √d_head
