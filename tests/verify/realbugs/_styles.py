"""Small correct attention modules in the styles the real-bug corpus comes from; each case overrides one step.

Written for shapecheck (no third-party code): ``Encoder`` (forward(x, mask=None), True = keep),
``Causal`` (nanoGPT-like, a causal flag in the constructor), ``Decoder`` (rotary inside, grouped
kv heads, a (k, v) cache, an optional window), ``Cross`` (forward(query, key, value,
key_padding_mask=None), True = pad).
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Steps(nn.Module):
    """The steps every style shares: split/merge heads, scale, fill, softmax, dropout."""

    heads: int
    d_head: int
    dropout: float

    def split(self, x: Tensor) -> Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, -1, self.d_head).transpose(1, 2)  # (batch, heads, seq, d_head)

    def merge(self, x: Tensor) -> Tensor:
        batch, heads, seq, d = x.shape
        return x.transpose(1, 2).reshape(batch, seq, heads * d)  # (batch, seq, heads * d_head)

    def scale(self) -> float:
        return self.d_head ** -0.5

    def fill_value(self, scores: Tensor) -> float:
        return torch.finfo(scores.dtype).min

    def normalise(self, scores: Tensor) -> Tensor:
        return scores.softmax(dim=-1)

    def drop(self, probs: Tensor) -> Tensor:
        return F.dropout(probs, self.dropout, training=self.training)

    def attend(self, q: Tensor, k: Tensor, v: Tensor, keep: Optional[Tensor]) -> Tensor:
        scores = q @ k.transpose(-2, -1) * self.scale()  # (batch, heads, seq_q, seq_k)
        if keep is not None:
            scores = scores.masked_fill(~keep, self.fill_value(scores))
        return self.drop(self.normalise(scores)) @ v  # (batch, heads, seq_q, d_head)


class Encoder(Steps):
    def __init__(self, dim: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.heads, self.d_head, self.dropout = heads, dim // heads, dropout
        self.to_q, self.to_k, self.to_v, self.to_out = (nn.Linear(dim, dim) for _ in range(4))

    def keep(self, mask: Tensor) -> Tensor:
        return mask[:, None, None, :]  # (batch, 1, 1, seq_k)

    def forward(self, x: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        q, k, v = self.split(self.to_q(x)), self.split(self.to_k(x)), self.split(self.to_v(x))
        out = self.attend(q, k, v, None if mask is None else self.keep(mask.bool()))
        return self.to_out(self.merge(out))  # (batch, seq, dim)


class Causal(Steps):
    def __init__(self, n_embd: int, n_head: int, dropout: float = 0.0, causal: bool = True, block_size: int = 64) -> None:
        super().__init__()
        self.heads, self.d_head, self.dropout, self.causal = n_head, n_embd // n_head, dropout, causal
        self.c_attn, self.c_proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.ones(block_size, block_size, dtype=torch.bool).tril(), persistent=False)

    def causal_keep(self, seq: int) -> Optional[Tensor]:
        return self.bias[:seq, :seq] if self.causal else None  # (seq, seq)

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = (self.split(t) for t in self.c_attn(x).chunk(3, dim=-1))
        return self.c_proj(self.merge(self.attend(q, k, v, self.causal_keep(x.size(1)))))


class Decoder(Steps):
    """Llama-like: rotary computed inside from the positions, grouped kv heads, a (k, v) cache, an optional window."""

    def __init__(self, dim: int, n_heads: int, n_kv_heads: Optional[int] = None, window: Optional[int] = None,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.d_head = n_heads, n_kv_heads or n_heads, dim // n_heads
        self.window, self.dropout = window, dropout
        self.wq = nn.Linear(dim, n_heads * self.d_head, bias=False)
        self.wk = nn.Linear(dim, self.kv_heads * self.d_head, bias=False)
        self.wv = nn.Linear(dim, self.kv_heads * self.d_head, bias=False)
        self.wo = nn.Linear(n_heads * self.d_head, dim, bias=False)

    def angles(self, start: int, seq: int) -> Tensor:
        inv = 1.0 / 10000 ** (torch.arange(0, self.d_head, 2).float() / self.d_head)
        return torch.arange(start, start + seq).float()[:, None] * inv  # (seq, d_head / 2)

    def rotate(self, x: Tensor, angles: Tensor) -> Tensor:
        cos, sin = angles.cos().repeat(1, 2).to(x.dtype), angles.sin().repeat(1, 2).to(x.dtype)  # (seq, d_head)
        half = x.size(-1) // 2
        return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin

    def repeat_kv(self, x: Tensor) -> Tensor:
        return x.repeat_interleave(self.heads // self.kv_heads, dim=1)  # (batch, heads, seq_k, d_head)

    def allowed(self, seq_q: int, seq_k: int) -> Tensor:
        q_pos = torch.arange(seq_k - seq_q, seq_k)[:, None]
        k_pos = torch.arange(seq_k)[None, :]
        keep = k_pos <= q_pos
        if self.window is not None:
            keep = keep & (k_pos > q_pos - self.window)
        return keep  # (seq_q, seq_k)

    def start(self, past: Optional[tuple[Tensor, Tensor]]) -> int:
        return 0 if past is None else past[0].size(2)

    def forward(self, x: Tensor, past_key_value: Optional[tuple[Tensor, Tensor]] = None, use_cache: bool = False):
        seq = x.size(1)
        angles = self.angles(self.start(past_key_value), seq)
        q = self.rotate(self.split(self.wq(x)), angles)  # (batch, heads, seq, d_head)
        k, v = self.rotate(self.split(self.wk(x)), angles), self.split(self.wv(x))  # (batch, kv_heads, seq, d_head)
        if past_key_value is not None:
            k, v = torch.cat([past_key_value[0], k], dim=2), torch.cat([past_key_value[1], v], dim=2)
        out = self.attend(q, self.repeat_kv(k), self.repeat_kv(v), self.allowed(seq, k.size(2))[None, None])
        out = self.wo(self.merge(out))  # (batch, seq, dim)
        return (out, (k, v)) if use_cache else out


class Cross(Steps):
    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.heads, self.d_head, self.dropout = num_heads, embed_dim // num_heads, dropout
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(embed_dim, embed_dim) for _ in range(4))

    def keep(self, key_padding_mask: Tensor) -> Tensor:
        return ~key_padding_mask[:, None, None, :]  # (batch, 1, 1, seq_k); True = pad in the argument

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Optional[Tensor] = None) -> Tensor:
        q, k, v = self.split(self.q_proj(query)), self.split(self.k_proj(key)), self.split(self.v_proj(value))
        out = self.attend(q, k, v, None if key_padding_mask is None else self.keep(key_padding_mask.bool()))
        return self.out_proj(self.merge(out))  # (batch, seq_q, embed_dim)


def sdpa_dropout(module: nn.Module, q: Tensor, k: Tensor, v: Tensor, keep: Optional[Tensor], p: float) -> Tensor:
    """F.scaled_dot_product_attention with dropout probability ``p`` (the case decides whether eval zeroes it)."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=p)


__all__ = ["Encoder", "Causal", "Decoder", "Cross", "sdpa_dropout", "math"]
