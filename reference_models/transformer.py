"""The Transformer encoder–decoder (Vaswani et al. 2017, "Attention Is All You Need"; seed 004).

Seed 004's letters map onto the axis vocabulary: B = batch, F = seq_k (the
source, input length), T = seq_q (the target, output length), N = heads,
H = d_k = d_v, E = N·H = d_model.

- Encoder layer (section 3.1): self-attention over the source, then the
  position-wise feed-forward network, each wrapped as LayerNorm(x + Sublayer(x))
  (post-norm, as the paper); ``norm_first=True`` gives x + Sublayer(LayerNorm(x)).
- Decoder layer: masked self-attention (the mask M of seed 004, 0 on and below
  the diagonal and −∞ above, so position i sees targets j <= i), encoder–decoder
  attention (queries from the decoder, keys and values from the encoder memory:
  scores B×N×T×F), then the feed-forward network.
- Embeddings scaled by sqrt(d_model) plus sinusoidal positions (sections 3.4, 3.5),
  dropout on their sum and on every sublayer's output (section 5.4); as in
  ``nn.Transformer`` the same dropout also falls on the attention probabilities.
- ``share_embeddings``: one matrix for the source embedding, the target embedding
  and the pre-softmax projection (section 3.4), counted once. The generator has
  no bias (the paper's "pre-softmax linear transformation").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Optional

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from reference_models.attention import AttentionConfig, Impl, MultiHeadAttention
from reference_models.layers import FeedForwardConfig, LayerNorm, PositionwiseFeedForward
from shapecheck import checked
from shapecheck.config import (
    default_head_sizes,
    require_bool,
    require_choice,
    require_positive,
    require_positive_number,
    require_probability,
)
from shapecheck.errors import ShapeError


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes of the encoder–decoder; the defaults are the paper's base model (Table 3)."""

    vocab: int = 37000  # shared source-target BPE vocabulary (WMT 2014 En-De, section 5.1)
    d_model: int = 512  # residual width
    layers: int = 6  # N: encoder layers, and as many decoder layers
    heads: int = 8  # h
    d_ff: int = 2048  # inner width of the feed-forward network
    d_k: Optional[int] = None  # per-head query/key width; None: d_model // heads
    d_v: Optional[int] = None  # per-head value width; None: d_model // heads
    dropout: float = 0.1  # P_drop
    max_seq: int = 512  # longest sequence the position table covers
    share_embeddings: bool = True  # tie source, target and pre-softmax weights (section 3.4)
    norm_first: bool = False  # False: post-norm as the paper; True: pre-norm (+ final norms)
    eps: float = 1e-6  # LayerNorm epsilon
    impl: Impl = "sdpa"  # attention kernel: "sdpa" (F.scaled_dot_product_attention) or "math" (explicit matmuls)

    def __post_init__(self) -> None:
        require_positive(self, "vocab", "d_model", "layers", "heads", "d_ff", "max_seq")
        default_head_sizes(self)
        require_probability(self, "dropout")
        require_choice(self, "impl", ("sdpa", "math"))
        require_bool(self, "share_embeddings", "norm_first")
        require_positive_number(self, "eps")

    @classmethod
    def base(cls) -> "TransformerConfig":
        """Table 3, "base": d_model 512, d_ff 2048, 8 heads, 6 layers, P_drop 0.1."""
        return cls()

    @classmethod
    def big(cls) -> "TransformerConfig":
        """Table 3, "big": d_model 1024, d_ff 4096, 16 heads, 6 layers, P_drop 0.3."""
        return cls(d_model=1024, d_ff=4096, heads=16, dropout=0.3)

    def attention(self) -> AttentionConfig:
        return AttentionConfig(
            self.d_model, self.heads, d_k=self.d_k, d_v=self.d_v, dropout=self.dropout, impl=self.impl
        )

    def feed_forward(self) -> FeedForwardConfig:
        return FeedForwardConfig(self.d_model, self.d_ff, dropout=self.dropout, activation="relu")


def base() -> TransformerConfig:
    return TransformerConfig.base()


def big() -> TransformerConfig:
    return TransformerConfig.big()


def subsequent_mask(seq: int) -> Float[Tensor, "seq seq"]:
    """Seed 004's additive mask M: 0 on and below the diagonal, −∞ above (A = QKᵀ + M)."""
    return torch.full((seq, seq), float("-inf")).triu(diagonal=1)  # (seq_q, seq_k)


def sinusoidal_positions(max_seq: int, d_model: int) -> Float[Tensor, "seq d_model"]:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...) (section 3.5)."""
    position = torch.arange(max_seq, dtype=torch.float32)[:, None]  # (seq, 1)
    rates = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_seq, d_model)
    table[:, 0::2] = torch.sin(position * rates)  # (seq, ceil(d_model/2))
    table[:, 1::2] = torch.cos(position * rates[: d_model // 2])  # (seq, floor(d_model/2))
    return table


def _residual(
    config: TransformerConfig, norm: LayerNorm, dropout: nn.Dropout, x: Tensor, sublayer: Callable[[Tensor], Tensor]
) -> Tensor:
    """LayerNorm(x + dropout(sublayer(x))) (post-norm, section 3.1), or x + dropout(sublayer(LayerNorm(x)))."""
    if config.norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    """Self-attention over the source, then the feed-forward network (section 3.1, Figure 1 left)."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.self_attn = MultiHeadAttention(config=config.attention())
        self.ffn = PositionwiseFeedForward(config.feed_forward())
        self.norm1 = LayerNorm(config.d_model, config.eps)
        self.norm2 = LayerNorm(config.d_model, config.eps)
        self.dropout = nn.Dropout(config.dropout)  # on each sublayer's output (section 5.4)

    @checked
    def forward(
        self,
        x: Float[Tensor, "batch seq d_model"],
        key_padding_mask: Optional[Bool[Tensor, "batch seq"]] = None,
        mask: Optional[Bool[Tensor, "#batch #heads #seq seq"]] = None,
    ) -> Float[Tensor, "batch seq d_model"]:
        # 1) self-attention: every source position attends every (unpadded) source position
        attend = partial(self.self_attn, mask=mask, key_padding_mask=key_padding_mask)
        x = _residual(self.config, self.norm1, self.dropout, x, attend)
        # 2) position-wise feed-forward
        return _residual(self.config, self.norm2, self.dropout, x, self.ffn)  # (batch, seq, d_model)


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder–decoder attention, feed-forward (section 3.1, Figure 1 right)."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.self_attn = MultiHeadAttention(config=config.attention())
        self.cross_attn = MultiHeadAttention(config=config.attention())
        self.ffn = PositionwiseFeedForward(config.feed_forward())
        self.norm1 = LayerNorm(config.d_model, config.eps)
        self.norm2 = LayerNorm(config.d_model, config.eps)
        self.norm3 = LayerNorm(config.d_model, config.eps)
        self.dropout = nn.Dropout(config.dropout)  # on each sublayer's output (section 5.4)

    @checked
    def forward(
        self,
        x: Float[Tensor, "batch seq_q d_model"],
        memory: Float[Tensor, "batch seq_k d_model"],
        tgt_key_padding_mask: Optional[Bool[Tensor, "batch seq_q"]] = None,
        memory_key_padding_mask: Optional[Bool[Tensor, "batch seq_k"]] = None,
    ) -> Float[Tensor, "batch seq_q d_model"]:
        # 1) masked self-attention: target i sees targets j <= i (seed 004's M), scores (batch, heads, seq_q, seq_q)
        attend = partial(self.self_attn, key_padding_mask=tgt_key_padding_mask, causal=True)
        x = _residual(self.config, self.norm1, self.dropout, x, attend)
        # 2) encoder-decoder attention: queries from the decoder, keys/values from the memory,
        #    scores (batch, heads, seq_q, seq_k)
        cross = partial(self.cross_attn, key=memory, value=memory, key_padding_mask=memory_key_padding_mask)
        x = _residual(self.config, self.norm2, self.dropout, x, cross)
        # 3) position-wise feed-forward
        return _residual(self.config, self.norm3, self.dropout, x, self.ffn)  # (batch, seq_q, d_model)


class Encoder(nn.Module):
    """``layers`` encoder layers; a final LayerNorm only when norm_first (post-norm layers end normalised)."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.layers))
        self.norm = LayerNorm(config.d_model, config.eps) if config.norm_first else None

    @checked
    def forward(
        self,
        x: Float[Tensor, "batch seq d_model"],
        key_padding_mask: Optional[Bool[Tensor, "batch seq"]] = None,
    ) -> Float[Tensor, "batch seq d_model"]:
        for layer in self.layers:
            x = layer(x, key_padding_mask)
        return x if self.norm is None else self.norm(x)


class Decoder(nn.Module):
    """``layers`` decoder layers; a final LayerNorm only when norm_first."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.layers))
        self.norm = LayerNorm(config.d_model, config.eps) if config.norm_first else None

    @checked
    def forward(
        self,
        x: Float[Tensor, "batch seq_q d_model"],
        memory: Float[Tensor, "batch seq_k d_model"],
        tgt_key_padding_mask: Optional[Bool[Tensor, "batch seq_q"]] = None,
        memory_key_padding_mask: Optional[Bool[Tensor, "batch seq_k"]] = None,
    ) -> Float[Tensor, "batch seq_q d_model"]:
        for layer in self.layers:
            x = layer(x, memory, tgt_key_padding_mask, memory_key_padding_mask)
        return x if self.norm is None else self.norm(x)


class Embedding(nn.Module):
    """Token embedding times sqrt(d_model) plus sinusoidal positions, then dropout (sections 3.4, 3.5, 5.4)."""

    def __init__(self, config: TransformerConfig, tokens: Optional[nn.Embedding] = None) -> None:
        super().__init__()
        self.config = config
        self.tokens = tokens if tokens is not None else _token_embedding(config)
        self.register_buffer("positions", sinusoidal_positions(config.max_seq, config.d_model), persistent=False)
        self.dropout = nn.Dropout(config.dropout)

    @checked
    def forward(self, ids: Int[Tensor, "batch seq"]) -> Float[Tensor, "batch seq d_model"]:
        seq = ids.size(1)
        if seq > self.config.max_seq:
            raise ShapeError(
                f"Embedding.forward: ids.shape[1] is {seq}, but max_seq={self.config.max_seq} "
                "(the position table ends there)"
            )
        x = self.tokens(ids) * math.sqrt(self.config.d_model)  # (batch, seq, d_model)
        return self.dropout(x + self.positions[:seq])  # (batch, seq, d_model) + (seq, d_model)


def _token_embedding(config: TransformerConfig) -> nn.Embedding:
    table = nn.Embedding(config.vocab, config.d_model)
    nn.init.normal_(table.weight, std=config.d_model**-0.5)  # x sqrt(d_model) gives unit scale
    return table


class Transformer(nn.Module):
    """The encoder–decoder: source and target ids -> next-token logits over the vocabulary."""

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.src_embed = Embedding(config)
        shared = self.src_embed.tokens if config.share_embeddings else None
        self.tgt_embed = Embedding(config, shared)
        self.encoder = Encoder(config)
        self.decoder = Decoder(config)
        self.generator = nn.Linear(config.d_model, config.vocab, bias=False)  # pre-softmax projection
        if config.share_embeddings:
            self.generator.weight = self.src_embed.tokens.weight  # one (vocab, d_model) matrix, three uses

    @checked
    def encode(
        self, src_ids: Int[Tensor, "batch seq_k"], src_key_padding_mask: Optional[Bool[Tensor, "batch seq_k"]] = None
    ) -> Float[Tensor, "batch seq_k d_model"]:
        return self.encoder(self.src_embed(src_ids), src_key_padding_mask)

    @checked
    def decode(
        self,
        tgt_ids: Int[Tensor, "batch seq_q"],
        memory: Float[Tensor, "batch seq_k d_model"],
        src_key_padding_mask: Optional[Bool[Tensor, "batch seq_k"]] = None,
        tgt_key_padding_mask: Optional[Bool[Tensor, "batch seq_q"]] = None,
    ) -> Float[Tensor, "batch seq_q vocab"]:
        hidden = self.decoder(self.tgt_embed(tgt_ids), memory, tgt_key_padding_mask, src_key_padding_mask)
        return self.generator(hidden)  # (batch, seq_q, d_model) x (d_model, vocab) -> (batch, seq_q, vocab)

    @checked
    def forward(
        self,
        src_ids: Int[Tensor, "batch seq_k"],
        tgt_ids: Int[Tensor, "batch seq_q"],
        src_key_padding_mask: Optional[Bool[Tensor, "batch seq_k"]] = None,
        tgt_key_padding_mask: Optional[Bool[Tensor, "batch seq_q"]] = None,
    ) -> Float[Tensor, "batch seq_q vocab"]:
        """Logits for target position i from the source and targets 0..i (teacher forcing)."""
        # 1) encode the source: (batch, seq_k) -> (batch, seq_k, d_model)
        memory = self.encode(src_ids, src_key_padding_mask)
        # 2) decode the shifted target against the memory and project to the vocabulary
        return self.decode(tgt_ids, memory, src_key_padding_mask, tgt_key_padding_mask)


__all__ = [
    "TransformerConfig",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "Embedding",
    "Transformer",
    "base",
    "big",
    "subsequent_mask",
    "sinusoidal_positions",
]
