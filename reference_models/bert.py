"""BERT (Devlin et al. 2019): embeddings, encoder, pooler, and seed 001's pre-training heads.

The modules keep the parameter names of transformers' ``BertModel``
(``embeddings.word_embeddings``, ``encoder.layer.0.attention.self.query``, ...),
so its state dict loads with ``load_state_dict``. The attention block is seed
000's ``SelfAttention``: query/key/value projections, scaled scores, softmax
over keys, attention dropout, output dense, dropout, then residual + TF-style
LayerNorm. Its residual adds the block's input to its output, so the input
width must equal d_model; ``SelfAttentionConfig`` (the seed's constructor as a
config) says so when they differ, instead of a late broadcasting error.

``BertModel.forward`` takes ``attention_mask`` as transformers does: shape
(batch, seq), 1/True = a real token to attend, 0/False = padding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Union

import torch
from jaxtyping import Bool, Float, Int, Shaped
from torch import Tensor, nn

from reference_models.attention import scaled_dot_product_attention
from reference_models.layers import ACTIVATIONS, LayerNorm, activation
from shapecheck import checked
from shapecheck.config import (
    require_choice,
    require_divisible,
    require_equal,
    require_positive,
    require_positive_number,
    require_probability,
)
from shapecheck.errors import ConfigError, ShapeError

POSITIONS = ("learned", "sinusoidal")
INITIALIZER_RANGE = 0.02  # std of the normal initialisation (BERT's initializer_range)
_HF_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}


@dataclass(frozen=True)
class SelfAttentionConfig:
    """Seed 000's ``SelfAttention(num_attention_heads, input_size, hidden_size, hidden_dropout_prob)``.

    The residual adds the input to the output, so ``d_in`` (input_size) must equal
    ``d_model`` (hidden_size); a mismatch raises ``ConfigError`` here.
    """

    heads: int = 12  # num_attention_heads
    d_in: int = 768  # input_size: width of the block's input
    d_model: int = 768  # hidden_size: width of queries, keys, values and the output
    dropout: float = 0.1  # hidden_dropout_prob: on the output dense, before the residual
    attn_dropout: float = 0.1  # attention_probs_dropout_prob (used but never defined in the seed)
    eps: float = 1e-12  # TF-style LayerNorm epsilon, inside the square root

    def __post_init__(self) -> None:
        require_positive(self, "heads", "d_in", "d_model")
        require_divisible(self, "d_model", "heads")
        require_equal(self, "d_in", "d_model", "the residual adds the input to the output")
        require_probability(self, "dropout", "attn_dropout")
        require_positive_number(self, "eps")

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads


@dataclass(frozen=True)
class BertConfig:
    """BERT sizes; the defaults are BERT-base as released (Devlin et al. 2019, section 3)."""

    vocab: int = 30522  # WordPiece vocabulary
    d_model: int = 768  # hidden size H
    layers: int = 12  # encoder layers L
    heads: int = 12  # attention heads A
    d_ff: int = 3072  # feed-forward inner width, 4H
    max_seq: int = 512  # positions
    segments: int = 2  # token types (sentence A / B)
    dropout: float = 0.1  # hidden_dropout_prob
    attn_dropout: float = 0.1  # attention_probs_dropout_prob
    eps: float = 1e-12  # LayerNorm epsilon (TF style)
    activation: str = "gelu"  # "gelu" (erf, as released), "gelu_tanh" (seed 001), "relu"
    positions: str = "learned"  # "learned" (as released) or "sinusoidal" (seed 001)

    def __post_init__(self) -> None:
        require_positive(self, "vocab", "d_model", "layers", "heads", "d_ff", "max_seq", "segments")
        require_divisible(self, "d_model", "heads")
        require_probability(self, "dropout", "attn_dropout")
        require_positive_number(self, "eps")
        require_choice(self, "activation", ACTIVATIONS)
        require_choice(self, "positions", POSITIONS)

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads

    @classmethod
    def base(cls, **overrides: Any) -> "BertConfig":
        """BERT-base: L=12, H=768, A=12, 110M parameters."""
        return cls(**overrides)

    @classmethod
    def large(cls, **overrides: Any) -> "BertConfig":
        """BERT-large: L=24, H=1024, A=16, 340M parameters."""
        return cls(**{"d_model": 1024, "layers": 24, "heads": 16, "d_ff": 4096, **overrides})

    @classmethod
    def from_hf(cls, hf_config: Any) -> "BertConfig":
        """The config of a transformers ``BertConfig`` (absolute positions, a supported hidden_act)."""
        act = hf_config.hidden_act
        if act not in _HF_ACTIVATIONS:
            choices = ", ".join(map(repr, _HF_ACTIVATIONS))
            raise ConfigError(f"BertConfig.from_hf: hidden_act={act!r} is not one of {choices}")
        kind = getattr(hf_config, "position_embedding_type", "absolute")
        if kind != "absolute":
            raise ConfigError(f"BertConfig.from_hf: position_embedding_type={kind!r} is not supported, only 'absolute'")
        return cls(
            vocab=hf_config.vocab_size,
            d_model=hf_config.hidden_size,
            layers=hf_config.num_hidden_layers,
            heads=hf_config.num_attention_heads,
            d_ff=hf_config.intermediate_size,
            max_seq=hf_config.max_position_embeddings,
            segments=hf_config.type_vocab_size,
            dropout=hf_config.hidden_dropout_prob,
            attn_dropout=hf_config.attention_probs_dropout_prob,
            eps=hf_config.layer_norm_eps,
            activation=_HF_ACTIVATIONS[act],
        )

    def attention(self) -> SelfAttentionConfig:
        """The attention block's config: input width d_model, as every BERT layer has."""
        return SelfAttentionConfig(self.heads, self.d_model, self.d_model, self.dropout, self.attn_dropout, self.eps)


class BertModelOutput(NamedTuple):
    sequence_output: Tensor  # (batch, seq, d_model): the last layer's hidden states
    pooled_output: Tensor  # (batch, d_model): tanh(W · first token + b)


class BertLMOutput(NamedTuple):
    nsp: Tensor  # (batch, 2): log-probabilities of (not next, is next)
    mlm: Tensor  # (batch, seq, vocab): log-probabilities of each token


class SinusoidalPositions(nn.Module):
    """Seed 001's fixed positions: PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same)."""

    def __init__(self, max_seq: int, d_model: int) -> None:
        super().__init__()
        position = torch.arange(max_seq, dtype=torch.float32)[:, None]  # (max_seq, 1)
        rate = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
        angle = position * rate  # (max_seq, ceil(d_model / 2))
        pe = torch.zeros(max_seq, d_model)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
        self.register_buffer("weight", pe, persistent=False)  # not a parameter: never trained

    @checked
    def forward(self, positions: Int[Tensor, "*batch"]) -> Float[Tensor, "*batch d_model"]:
        return self.weight[positions]  # (*batch, d_model)


class BertEmbeddings(nn.Module):
    """Token + position + segment embeddings, then LayerNorm and dropout (seed 001's BERTEmbedding)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.word_embeddings = nn.Embedding(config.vocab, config.d_model)
        if config.positions == "learned":
            self.position_embeddings: nn.Module = nn.Embedding(config.max_seq, config.d_model)
        else:
            self.position_embeddings = SinusoidalPositions(config.max_seq, config.d_model)
        self.token_type_embeddings = nn.Embedding(config.segments, config.d_model)
        self.LayerNorm = LayerNorm(config.d_model, config.eps)
        self.dropout = nn.Dropout(config.dropout)

    @checked
    def forward(
        self, input_ids: Int[Tensor, "batch seq"], segment_ids: Optional[Int[Tensor, "batch seq"]] = None
    ) -> Float[Tensor, "batch seq d_model"]:
        seq = input_ids.size(1)
        if seq > self.config.max_seq:
            raise ShapeError(
                f"BertEmbeddings.forward: input_ids.shape[1] is {seq}, but max_seq={self.config.max_seq} "
                "(bound by the config): there are no more positions"
            )
        if segment_ids is None:
            segment_ids = torch.zeros_like(input_ids)
        positions = torch.arange(seq, device=input_ids.device)  # (seq,)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(segment_ids)  # (batch, seq, d_model)
        x = x + self.position_embeddings(positions)  # (batch, seq, d_model) + (seq, d_model)
        return self.dropout(self.LayerNorm(x))


def _attention_config(config: Union[SelfAttentionConfig, BertConfig]) -> SelfAttentionConfig:
    return config.attention() if isinstance(config, BertConfig) else config


class BertSelfAttention(nn.Module):
    """Seed 000's attention: softmax(Q Kᵀ / √d_head) V per head, heads merged back to d_model."""

    def __init__(self, config: Union[SelfAttentionConfig, BertConfig]) -> None:
        super().__init__()
        self.config = c = _attention_config(config)
        self.query = nn.Linear(c.d_in, c.d_model)
        self.key = nn.Linear(c.d_in, c.d_model)
        self.value = nn.Linear(c.d_in, c.d_model)

    def _split(self, x: Tensor) -> Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.config.heads, self.config.d_head).transpose(1, 2)  # (batch, heads, seq, d_head)

    @checked
    def forward(
        self,
        hidden_states: Float[Tensor, "batch seq d_model"],
        mask: Optional[Bool[Tensor, "#batch #heads #seq seq"]] = None,
    ) -> Float[Tensor, "batch seq d_model"]:
        """``mask``: True = may attend (e.g. (batch, 1, 1, seq) from a padding mask)."""
        c = self.config
        # 1) project and split heads: (batch, seq, d_model) -> (batch, heads, seq, d_head)
        q, k, v = (self._split(proj(hidden_states)) for proj in (self.query, self.key, self.value))
        # 2) attend: softmax over keys, dropout on the probabilities
        context, _ = scaled_dot_product_attention(q, k, v, mask, c.attn_dropout, self.training)
        # 3) merge heads: (batch, heads, seq, d_head) -> (batch, seq, d_model)
        batch, _, seq, _ = context.shape
        return context.transpose(1, 2).reshape(batch, seq, c.d_model)


class BertSelfOutput(nn.Module):
    """Output dense, dropout, then residual + TF-style LayerNorm (the end of seed 000's block)."""

    def __init__(self, config: SelfAttentionConfig) -> None:
        super().__init__()
        self.config = config
        self.dense = nn.Linear(config.d_model, config.d_model)
        self.LayerNorm = LayerNorm(config.d_model, config.eps)
        self.dropout = nn.Dropout(config.dropout)

    @checked
    def forward(
        self, hidden_states: Float[Tensor, "batch seq d_model"], residual: Float[Tensor, "batch seq d_model"]
    ) -> Float[Tensor, "batch seq d_model"]:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + residual)


class BertAttention(nn.Module):
    """Seed 000's ``SelfAttention`` block: LayerNorm(x + dropout(dense(attention(x))))."""

    def __init__(self, config: Union[SelfAttentionConfig, BertConfig]) -> None:
        super().__init__()
        self.config = _attention_config(config)
        self.self = BertSelfAttention(self.config)
        self.output = BertSelfOutput(self.config)

    @checked
    def forward(
        self,
        hidden_states: Float[Tensor, "batch seq d_model"],
        mask: Optional[Bool[Tensor, "#batch #heads #seq seq"]] = None,
    ) -> Float[Tensor, "batch seq d_model"]:
        return self.output(self.self(hidden_states, mask), hidden_states)


class BertIntermediate(nn.Module):
    """The feed-forward's first half: act(W₁ x + b₁), d_model -> d_ff."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.dense = nn.Linear(config.d_model, config.d_ff)
        self.activation = activation(config.activation)

    @checked
    def forward(self, hidden_states: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_ff"]:
        return self.activation(self.dense(hidden_states))


class BertOutput(nn.Module):
    """The feed-forward's second half, W₂ h + b₂ (d_ff -> d_model), dropout, residual + LayerNorm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.dense = nn.Linear(config.d_ff, config.d_model)
        self.LayerNorm = LayerNorm(config.d_model, config.eps)
        self.dropout = nn.Dropout(config.dropout)

    @checked
    def forward(
        self, hidden_states: Float[Tensor, "batch seq d_ff"], residual: Float[Tensor, "batch seq d_model"]
    ) -> Float[Tensor, "batch seq d_model"]:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + residual)


class BertLayer(nn.Module):
    """One post-norm encoder layer: attention block, then feed-forward block, each with residual + LayerNorm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    @checked
    def forward(
        self,
        hidden_states: Float[Tensor, "batch seq d_model"],
        mask: Optional[Bool[Tensor, "#batch #heads #seq seq"]] = None,
    ) -> Float[Tensor, "batch seq d_model"]:
        attended = self.attention(hidden_states, mask)  # (batch, seq, d_model)
        return self.output(self.intermediate(attended), attended)  # (batch, seq, d_ff) -> (batch, seq, d_model)


class BertEncoder(nn.Module):
    """``layers`` BertLayers in sequence."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.layer = nn.ModuleList(BertLayer(config) for _ in range(config.layers))

    @checked
    def forward(
        self,
        hidden_states: Float[Tensor, "batch seq d_model"],
        mask: Optional[Bool[Tensor, "#batch #heads #seq seq"]] = None,
    ) -> Float[Tensor, "batch seq d_model"]:
        for layer in self.layer:
            hidden_states = layer(hidden_states, mask)
        return hidden_states


class BertPooler(nn.Module):
    """tanh(W · h₀ + b): the first ([CLS]) token's final hidden state through a dense layer."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.dense = nn.Linear(config.d_model, config.d_model)
        self.activation = nn.Tanh()

    @checked
    def forward(self, hidden_states: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch d_model"]:
        return self.activation(self.dense(hidden_states[:, 0]))  # (batch, d_model)


def init_bert_weights(module: nn.Module) -> None:
    """BERT's initialisation: weights ~ N(0, 0.02²), biases 0, LayerNorm weight 1 (as transformers)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=INITIALIZER_RANGE)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
    if isinstance(module, LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


class BertModel(nn.Module):
    """Embeddings, ``layers`` encoder layers and the pooler; state dict keys as transformers' BertModel.

    ``add_pooling_layer=False`` (as in transformers) leaves the pooler out; ``pooled_output`` is then None.
    """

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self.apply(init_bert_weights)

    @checked
    def forward(
        self,
        input_ids: Int[Tensor, "batch seq"],
        segment_ids: Optional[Int[Tensor, "batch seq"]] = None,
        attention_mask: Optional[Shaped[Tensor, "batch seq"]] = None,
    ) -> tuple[Float[Tensor, "batch seq d_model"], Optional[Float[Tensor, "batch d_model"]]]:
        """Returns ``BertModelOutput(sequence_output, pooled_output)``.

        ``attention_mask``: (batch, seq), nonzero/True = a real token, 0/False = padding (as transformers).
        """
        # 1) embed: (batch, seq) -> (batch, seq, d_model)
        hidden = self.embeddings(input_ids, segment_ids)
        # 2) encode, every query seeing only the real tokens
        keep = None if attention_mask is None else attention_mask.bool()[:, None, None, :]  # (batch, 1, 1, seq)
        hidden = self.encoder(hidden, keep)
        # 3) pool the first token
        return BertModelOutput(hidden, None if self.pooler is None else self.pooler(hidden))


class NextSentencePrediction(nn.Module):
    """Seed 001's NSP head: LogSoftmax(W · h₀ + b) over (not next, is next), from the first token."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.linear = nn.Linear(config.d_model, 2)
        self.softmax = nn.LogSoftmax(dim=-1)

    @checked
    def forward(self, hidden_states: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch 2"]:
        return self.softmax(self.linear(hidden_states[:, 0]))  # (batch, d_model) -> (batch, 2)


class MaskedLanguageModel(nn.Module):
    """Seed 001's MLM head: LogSoftmax(W · h + b) over the vocabulary at every position."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.linear = nn.Linear(config.d_model, config.vocab)
        self.softmax = nn.LogSoftmax(dim=-1)

    @checked
    def forward(self, hidden_states: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq vocab"]:
        return self.softmax(self.linear(hidden_states))  # (batch, seq, d_model) -> (batch, seq, vocab)


class BertLM(nn.Module):
    """Seed 001's BERTLM: BertModel with the next-sentence and masked-LM heads.

    As in the seed, NSP reads the first token's hidden state directly, so the
    model has no pooler (it would be a dead weight). The released BERT's
    pre-training heads differ (NSP on the pooled output, a transform layer and a
    decoder tied to the word embeddings before the MLM softmax).
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.bert = BertModel(config, add_pooling_layer=False)
        self.next_sentence = NextSentencePrediction(config)
        self.mask_lm = MaskedLanguageModel(config)
        self.next_sentence.apply(init_bert_weights)
        self.mask_lm.apply(init_bert_weights)

    @checked
    def forward(
        self,
        input_ids: Int[Tensor, "batch seq"],
        segment_ids: Optional[Int[Tensor, "batch seq"]] = None,
        attention_mask: Optional[Shaped[Tensor, "batch seq"]] = None,
    ) -> tuple[Float[Tensor, "batch 2"], Float[Tensor, "batch seq vocab"]]:
        """Returns ``BertLMOutput(nsp, mlm)``: log-probabilities, NSP from the first token."""
        hidden = self.bert(input_ids, segment_ids, attention_mask).sequence_output  # (batch, seq, d_model)
        return BertLMOutput(self.next_sentence(hidden), self.mask_lm(hidden))
