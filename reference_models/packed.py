"""Sequence-first multi-head attention with a packed in-projection (seed 002, done right).

Seed 002 (mmcv/DETR style) keeps the three input projections in one
``in_proj_weight`` of shape (3·d_model, d_model), adds positional embeddings to
queries and keys *before* projecting, and adds an identity shortcut after the
output projection (``fuse_heads``). Its head merge::

    output.permute(0, 2, 1, 3).contiguous().view(tgt_len, bsz, embed_dim)

lays the memory out as (batch, seq_q, d_model) and then reads it as
(seq_q, batch, d_model): every shape is right, but batch items are mixed
whenever batch > 1 and seq_q > 1. Here the merge permutes straight to
(seq_q, batch, heads, d_head) before flattening the heads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor, nn

from reference_models.attention import keep_mask, scaled_dot_product_attention
from shapecheck import checked
from shapecheck.config import require_bool, require_divisible, require_positive, require_probability


@dataclass(frozen=True)
class PackedAttentionConfig:
    """Sizes of seed 002's ``MultiheadAttention(embed_dim, num_heads, ...)``."""

    d_model: int  # embed_dim
    heads: int  # num_heads
    attn_dropout: float = 0.1  # dropout on the attention probabilities (att_dropout)
    out_dropout: float = 0.1  # dropout after fuse_heads, before the shortcut
    average_weights: bool = True  # return head-averaged weights (average_attn_weights)

    def __post_init__(self) -> None:
        require_positive(self, "d_model", "heads")
        require_divisible(self, "d_model", "heads")
        require_probability(self, "attn_dropout", "out_dropout")
        require_bool(self, "average_weights")

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads


class PackedMultiheadAttention(nn.Module):
    """Seed 002's module, sequence-first: inputs and output are (seq, batch, d_model).

    Parameters keep the seed's names: ``in_proj_weight`` (3·d_model, d_model),
    ``in_proj_bias`` (3·d_model), ``fuse_heads`` (the output projection).
    """

    def __init__(self, config: PackedAttentionConfig) -> None:
        super().__init__()
        self.config = config
        e = config.d_model
        self.in_proj_weight = nn.Parameter(torch.empty(3 * e, e))
        self.in_proj_bias = nn.Parameter(torch.empty(3 * e))
        self.fuse_heads = nn.Linear(e, e)
        self.out_dropout = nn.Dropout(config.out_dropout)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.in_proj_bias)

    def _project(self, x: Tensor, part: int) -> Tensor:
        """The ``part``-th third of the packed projection (0: query, 1: key, 2: value), split into heads."""
        c = self.config
        rows = slice(part * c.d_model, (part + 1) * c.d_model)
        x = F.linear(x, self.in_proj_weight[rows], self.in_proj_bias[rows])  # (seq, batch, d_model)
        seq, batch, _ = x.shape
        return x.view(seq, batch, c.heads, c.d_head).permute(1, 2, 0, 3)  # (batch, heads, seq, d_head)

    @checked
    def forward(
        self,
        query: Float[Tensor, "seq_q batch d_model"],
        key: Float[Tensor, "seq_k batch d_model"],
        value: Float[Tensor, "seq_k batch d_model"],
        identity: Optional[Float[Tensor, "seq_q batch d_model"]] = None,
        query_pos: Optional[Float[Tensor, "seq_q batch d_model"]] = None,
        key_pos: Optional[Float[Tensor, "seq_k batch d_model"]] = None,
        mask: Optional[Bool[Tensor, "#batch #heads #seq_q seq_k"]] = None,
        key_padding_mask: Optional[Bool[Tensor, "batch seq_k"]] = None,
    ) -> tuple[Float[Tensor, "seq_q batch d_model"], Float[Tensor, "batch ... seq_q seq_k"]]:
        """Returns the output and the weights: (batch, seq_q, seq_k) head-averaged, else (batch, heads, seq_q, seq_k).

        ``mask`` (True = may attend) and ``key_padding_mask`` (True = padding) follow
        reference_models.attention; the seed has neither.
        """
        c = self.config
        # 1) the shortcut is the query before positions are added (the seed's comment:
        #    the next layer adds positions again)
        identity = query if identity is None else identity
        query = query if query_pos is None else query + query_pos
        key = key if key_pos is None else key + key_pos
        # 2) packed projection, split heads: (seq, batch, d_model) -> (batch, heads, seq, d_head)
        q, k, v = self._project(query, 0), self._project(key, 1), self._project(value, 2)
        # 3) attend: (batch, heads, seq_q, seq_k) x (batch, heads, seq_k, d_head) -> (batch, heads, seq_q, d_head)
        keep = keep_mask(mask, key_padding_mask, False, q.size(2), k.size(2), q.device)
        out, weights = scaled_dot_product_attention(q, k, v, keep, c.attn_dropout, self.training)
        # 4) merge heads: (batch, heads, seq_q, d_head) -> (seq_q, batch, heads, d_head) -> (seq_q, batch, d_model)
        out = out.permute(2, 0, 1, 3).reshape(q.size(2), q.size(0), c.d_model)
        # 5) output projection, dropout, identity shortcut
        out = self.out_dropout(self.fuse_heads(out)) + identity  # (seq_q, batch, d_model)
        if c.average_weights:
            weights = weights.mean(dim=1)  # (batch, seq_q, seq_k)
        return out, weights


__all__ = ["PackedAttentionConfig", "PackedMultiheadAttention"]
