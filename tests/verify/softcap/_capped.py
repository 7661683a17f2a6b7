"""Self-attention whose logits are soft-capped as in Gemma 2: c·tanh(scores / c) before the softmax."""
import torch
from torch import nn


class Capped(nn.Module):
    def __init__(self, d_model: int = 8, n_heads: int = 2, cap: float = 0.2):
        super().__init__()
        self.n_heads, self.d_head, self.cap = n_heads, d_model // n_heads, cap
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(d_model, d_model) for _ in range(3))
        self.o_proj = nn.Linear(d_model, d_model)

    def split(self, x):  # (B, T, C) -> (B, nh, T, hs)
        return x.view(x.size(0), x.size(1), self.n_heads, self.d_head).transpose(1, 2)

    def capped(self, scores):
        return torch.tanh(scores / self.cap) * self.cap

    def weights(self, scores):  # (B, nh, T, T) -> (B, nh, T, T)
        return self.capped(scores).softmax(dim=-1)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(x)), self.split(self.v_proj(x))
        scores = q @ k.transpose(-2, -1) * self.d_head ** -0.5  # (B, nh, T, T)
        y = self.weights(scores) @ v  # (B, nh, T, hs)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))
