"""Attention modules with one planted parameter defect each (targets for the audit tests and CLI)."""

import torch
from torch import nn

from reference_models.attention import MultiHeadAttention


class UnusedExtraLinear(MultiHeadAttention):
    """The reference block plus a Linear that forward never calls (dead, and extra)."""

    def __init__(self, d_model: int = 16, heads: int = 2) -> None:
        super().__init__(d_model, heads)
        self.extra = nn.Linear(d_model, d_model)


class _QKV(nn.Module):
    def __init__(self, d_model: int, heads: int, k_bias: bool = True) -> None:
        super().__init__()
        self.heads = heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model, bias=k_bias)
        self.v_proj = nn.Linear(d_model, d_model)

    def attend(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, d_model = x.shape
        split = lambda t: t.view(batch, seq, self.heads, -1).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)  # (batch, heads, seq, d_head)
        return out.transpose(1, 2).reshape(batch, seq, d_model)


class MissingOutProjection(_QKV):
    """Heads are merged and returned without W_O."""

    def __init__(self, d_model: int = 16, heads: int = 2) -> None:
        super().__init__(d_model, heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attend(x)


class KeyWithoutBias(_QKV):
    """q, v and out projections have biases; k_proj does not."""

    def __init__(self, d_model: int = 16, heads: int = 2) -> None:
        super().__init__(d_model, heads, k_bias=False)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out_proj(self.attend(x))


class TiedLM(nn.Module):
    """Token embedding, one attention block, and a pre-softmax projection tied to the embedding."""

    def __init__(self, d_model: int = 16, heads: int = 2, vocab: int = 50) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.attn = MultiHeadAttention(d_model, heads)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)
        self.lm_head.weight = self.embed.weight

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self.attn(self.embed(ids)))


class SharedLayers(nn.Module):
    """One attention block applied twice under two names (cross-layer sharing, ALBERT style)."""

    def __init__(self, d_model: int = 16, heads: int = 2) -> None:
        super().__init__()
        block = MultiHeadAttention(d_model, heads)
        self.layers = nn.ModuleList([block, block])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class _BiasFreeAttention(_QKV):
    """q/k/v/o projections without biases (Llama's convention)."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__(dim, heads, k_bias=False)
        self.q_proj, self.v_proj = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.o_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.o_proj(self.attend(x))  # (batch, seq, dim)


class SwiGLUBlock(nn.Module):
    """A Llama-style block whose feed-forward width is a constructor default (hidden=1408, a SwiGLU width).

    ``hidden`` is not the model width: audit must keep its default, not map d_model onto it.
    """

    def __init__(self, dim: int = 512, n_heads: int = 8, hidden: int = 1408) -> None:
        super().__init__()
        self.attn = _BiasFreeAttention(dim, n_heads)
        self.w1, self.w3 = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)  # gate, up
        self.w2 = nn.Linear(hidden, dim, bias=False)  # down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(x)  # (batch, seq, dim)
        gated = torch.nn.functional.silu(self.w1(x)) * self.w3(x)  # (batch, seq, hidden)
        return x + self.w2(gated)  # (batch, seq, dim)


class UnusedHead(nn.Module):
    """Clean counts, but a head Linear that forward never calls: only the liveness pass can tell."""

    def __init__(self, d_model: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.attn = _BiasFreeAttention(d_model, heads)
        self.head = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x)  # (batch, seq, d_model); self.head is never called
