"""Scaled dot-product attention and batch-first multi-head attention.

Scaled dot-product attention (Vaswani et al. 2017, section 3.2.1; seed 001's
``Attention``; seed 004's S = softmax(QKᵀ/√H)):

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

Multi-head attention (section 3.2.2; seed 003's general case): ``heads``
projections of width d_k for queries and keys and d_v for values, concatenated
and projected back to d_model, with h·d_model·(d_q + d_k + 2·d_v) weights.

Mask conventions, one for each argument:
- ``mask``: boolean, True = may attend (the convention of
  ``F.scaled_dot_product_attention``), broadcastable to (batch, heads, seq_q, seq_k);
- ``key_padding_mask``: boolean, True = padding to ignore (the convention of
  ``nn.MultiheadAttention``), shape (batch, seq_k);
- ``causal=True``: query i attends keys j <= i.
A query row with every key masked returns zeros, not NaN, and its gradients stay finite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Optional, Union

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor, nn

from shapecheck import checked
from shapecheck.errors import ConfigError
from shapecheck.config import default_head_sizes, require_choice, require_positive, require_probability

Impl = Literal["sdpa", "math"]


@checked
def scaled_dot_product_attention(
    query: Float[Tensor, "*batch seq_q d_k"],
    key: Float[Tensor, "*batch seq_k d_k"],
    value: Float[Tensor, "*batch seq_k d_v"],
    mask: Optional[Bool[Tensor, "..."]] = None,
    dropout_p: float = 0.0,
    training: bool = False,
) -> tuple[Float[Tensor, "*batch seq_q d_v"], Float[Tensor, "*batch seq_q seq_k"]]:
    """softmax(Q Kᵀ / √d_k) V, returning the output and the attention probabilities.

    ``mask`` is True where a query may attend a key, broadcastable to (*batch, seq_q, seq_k).
    Rows with no visible key give zero probabilities and a zero output.
    """
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))  # (*batch, seq_q, seq_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    probs = scores.softmax(dim=-1)  # (*batch, seq_q, seq_k), normalised over keys
    if mask is not None:
        probs = probs * mask.any(dim=-1, keepdim=True)  # fully masked rows -> 0
    probs = F.dropout(probs, dropout_p, training=training)
    return probs @ value, probs  # (*batch, seq_q, seq_k) x (*batch, seq_k, d_v) -> (*batch, seq_q, d_v)


class ScaledDotProductAttention(nn.Module):
    """Seed 001's ``Attention`` as a module: dropout on the probabilities, no parameters."""

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        if not 0.0 <= dropout < 1.0:
            raise ConfigError(f"ScaledDotProductAttention: dropout={dropout} must be in [0, 1)")
        self.dropout = dropout

    def forward(
        self,
        query: Float[Tensor, "*batch seq_q d_k"],
        key: Float[Tensor, "*batch seq_k d_k"],
        value: Float[Tensor, "*batch seq_k d_v"],
        mask: Optional[Bool[Tensor, "..."]] = None,
    ) -> tuple[Float[Tensor, "*batch seq_q d_v"], Float[Tensor, "*batch seq_q seq_k"]]:
        return scaled_dot_product_attention(query, key, value, mask, self.dropout, self.training)


@dataclass(frozen=True)
class AttentionConfig:
    """Multi-head attention sizes. d_k and d_v default to d_model // heads."""

    d_model: int = 512  # model width (embed_dim, hidden_size)
    heads: int = 8  # attention heads
    d_k: Optional[int] = None  # per-head query/key width; None: d_model // heads
    d_v: Optional[int] = None  # per-head value width; None: d_model // heads
    dropout: float = 0.0  # dropout on the attention probabilities
    bias: bool = True  # biases on the four projections
    impl: Impl = "sdpa"  # "sdpa": F.scaled_dot_product_attention; "math": explicit matmuls

    def __post_init__(self) -> None:
        require_positive(self, "d_model", "heads")
        default_head_sizes(self)
        require_probability(self, "dropout")
        require_choice(self, "impl", ("sdpa", "math"))


def keep_mask(
    mask: Optional[Tensor], key_padding_mask: Optional[Tensor], causal: bool, seq_q: int, seq_k: int, device: torch.device
) -> Optional[Tensor]:
    """One boolean keep-mask, broadcastable to (batch, heads, seq_q, seq_k), or None."""
    keep = mask
    if key_padding_mask is not None:
        pad = ~key_padding_mask[:, None, None, :]  # (batch, 1, 1, seq_k)
        keep = pad if keep is None else keep & pad
    if causal:
        tri = torch.ones(seq_q, seq_k, dtype=torch.bool, device=device).tril()  # (seq_q, seq_k)
        keep = tri if keep is None else keep & tri
    return keep


class MultiHeadAttention(nn.Module):
    """Batch-first multi-head attention (Vaswani et al. 2017, section 3.2.2).

    ``forward(query)`` is self-attention; ``forward(query, key, value)`` attends
    from seq_q queries to seq_k keys. ``need_weights=True`` also returns the
    per-head attention probabilities (computed with explicit matmuls).
    """

    def __init__(self, d_model: int = 512, heads: int = 8, dropout: float = 0.0, **kwargs: object) -> None:
        super().__init__()
        config = kwargs.pop("config", None)
        self.config: AttentionConfig = config or AttentionConfig(d_model, heads, dropout=dropout, **kwargs)
        c = self.config
        self.q_proj = nn.Linear(c.d_model, c.heads * c.d_k, bias=c.bias)
        self.k_proj = nn.Linear(c.d_model, c.heads * c.d_k, bias=c.bias)
        self.v_proj = nn.Linear(c.d_model, c.heads * c.d_v, bias=c.bias)
        self.out_proj = nn.Linear(c.heads * c.d_v, c.d_model, bias=c.bias)

    @classmethod
    def from_config(cls, config: AttentionConfig) -> "MultiHeadAttention":
        return cls(config=config)

    def _split(self, x: Tensor, width: int) -> Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.config.heads, width).transpose(1, 2)  # (batch, heads, seq, width)

    @checked
    def forward(
        self,
        query: Float[Tensor, "batch seq_q d_model"],
        key: Optional[Float[Tensor, "batch seq_k d_model"]] = None,
        value: Optional[Float[Tensor, "batch seq_k d_model"]] = None,
        mask: Optional[Bool[Tensor, "#batch #heads #seq_q seq_k"]] = None,
        key_padding_mask: Optional[Bool[Tensor, "batch seq_k"]] = None,
        causal: bool = False,
        need_weights: bool = False,
    ) -> Union[
        Float[Tensor, "batch seq_q d_model"],
        tuple[Float[Tensor, "batch seq_q d_model"], Float[Tensor, "batch heads seq_q seq_k"]],
    ]:
        c = self.config
        key = query if key is None else key
        value = key if value is None else value
        # 1) project and split heads: (batch, seq, heads*d) -> (batch, heads, seq, d)
        q = self._split(self.q_proj(query), c.d_k)  # (batch, heads, seq_q, d_k)
        k = self._split(self.k_proj(key), c.d_k)  # (batch, heads, seq_k, d_k)
        v = self._split(self.v_proj(value), c.d_v)  # (batch, heads, seq_k, d_v)
        keep = keep_mask(mask, key_padding_mask, causal, q.size(2), k.size(2), q.device)
        # 2) attend
        dropout_p = c.dropout if self.training else 0.0
        if need_weights or c.impl == "math":
            out, probs = scaled_dot_product_attention(q, k, v, keep, c.dropout, self.training)
        else:
            out, probs = self._sdpa(q, k, v, keep, dropout_p), None
        # 3) merge heads: (batch, heads, seq_q, d_v) -> (batch, seq_q, heads*d_v)
        out = out.transpose(1, 2).reshape(out.size(0), out.size(2), c.heads * c.d_v)
        out = self.out_proj(out)  # (batch, seq_q, d_model)
        return (out, probs) if need_weights else out

    @staticmethod
    def _sdpa(q: Tensor, k: Tensor, v: Tensor, keep: Optional[Tensor], dropout_p: float) -> Tensor:
        """The fused kernel; a boolean mask becomes a finite additive one so masked rows stay finite."""
        if keep is None:
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
        bias = torch.zeros(keep.shape, dtype=q.dtype, device=q.device)
        bias = bias.masked_fill(~keep, torch.finfo(q.dtype).min)  # (#batch, #heads, #seq_q, seq_k)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p)
        return out * keep.any(dim=-1, keepdim=True)  # fully masked rows -> 0
