"""GPT-2 (Radford et al. 2019): a decoder-only, pre-norm Transformer with learned positions.

Not in the seed posts; here for ``shapecheck report``'s gpt2 presets. Module
names follow transformers' ``GPT2Model`` (``wte``, ``wpe``, ``h.{i}.ln_1``,
``attn.c_attn``, ``attn.c_proj``, ``ln_2``, ``mlp.c_fc``, ``mlp.c_proj``,
``ln_f``) so state dicts line up, but the projections are ``nn.Linear``:
transformers' ``Conv1D`` stores its weight as (in, out), so copy it with ``.t()``.

    h_0 = wte(ids) + wpe(positions)
    h   = h + attn(ln_1(h))       (causal self-attention, fused Q/K/V in c_attn)
    h   = h + mlp(ln_2(h))        (c_fc -> gelu, tanh approximation -> c_proj)
    out = ln_f(h)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from shapecheck import checked
from shapecheck.config import require_divisible, require_positive, require_positive_number, require_probability
from shapecheck.errors import ShapeError


@dataclass(frozen=True)
class GPT2Config:
    """GPT-2 sizes; the defaults are the released 124M model ("gpt2")."""

    vocab: int = 50257  # byte-level BPE vocabulary (vocab_size)
    max_seq: int = 1024  # learned positions (n_positions)
    d_model: int = 768  # residual width (n_embd)
    layers: int = 12  # blocks (n_layer)
    heads: int = 12  # attention heads (n_head)
    d_ff: int = 3072  # MLP inner width, 4 * d_model (n_inner)
    dropout: float = 0.1  # embedding, attention and residual dropout (embd/attn/resid_pdrop)
    eps: float = 1e-5  # LayerNorm epsilon (layer_norm_epsilon)

    def __post_init__(self) -> None:
        require_positive(self, "vocab", "max_seq", "d_model", "layers", "heads", "d_ff")
        require_divisible(self, "d_model", "heads")
        require_probability(self, "dropout")
        require_positive_number(self, "eps")

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads

    @classmethod
    def gpt2(cls) -> "GPT2Config":
        """The released "gpt2" (124M parameters)."""
        return cls()

    @classmethod
    def medium(cls) -> "GPT2Config":
        """The released "gpt2-medium" (355M)."""
        return cls(d_model=1024, layers=24, heads=16, d_ff=4096)

    @classmethod
    def large(cls) -> "GPT2Config":
        """The released "gpt2-large" (774M)."""
        return cls(d_model=1280, layers=36, heads=20, d_ff=5120)

    @classmethod
    def xl(cls) -> "GPT2Config":
        """The released "gpt2-xl" (1.5B)."""
        return cls(d_model=1600, layers=48, heads=25, d_ff=6400)


# The released models by their hub names.
PRESETS = {
    "gpt2": GPT2Config.gpt2,
    "gpt2-medium": GPT2Config.medium,
    "gpt2-large": GPT2Config.large,
    "gpt2-xl": GPT2Config.xl,
}


class CausalSelfAttention(nn.Module):
    """Masked multi-head self-attention with the three projections fused in ``c_attn``."""

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.config = config
        self.c_attn = nn.Linear(config.d_model, 3 * config.d_model)
        self.c_proj = nn.Linear(config.d_model, config.d_model)
        self.resid_dropout = nn.Dropout(config.dropout)

    @checked
    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        c = self.config
        batch, seq, _ = x.shape
        # 1) project once and split: (batch, seq, 3*d_model) -> 3 x (batch, heads, seq, d_head)
        q, k, v = self.c_attn(x).view(batch, seq, 3, c.heads, c.d_head).permute(2, 0, 3, 1, 4)
        # 2) attend, query i sees keys j <= i: (batch, heads, seq, seq) x (batch, heads, seq, d_head)
        dropout_p = c.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)
        # 3) merge heads: (batch, heads, seq, d_head) -> (batch, seq, d_model)
        out = out.transpose(1, 2).reshape(batch, seq, c.d_model)
        return self.resid_dropout(self.c_proj(out))


class MLP(nn.Module):
    """c_fc -> GELU (tanh approximation, GPT-2's "gelu_new") -> c_proj -> dropout."""

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.config = config
        self.c_fc = nn.Linear(config.d_model, config.d_ff)
        self.c_proj = nn.Linear(config.d_ff, config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    @checked
    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        hidden = F.gelu(self.c_fc(x), approximate="tanh")  # (batch, seq, d_ff)
        return self.dropout(self.c_proj(hidden))  # (batch, seq, d_model)


class Block(nn.Module):
    """One pre-norm block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.config = config
        self.ln_1 = nn.LayerNorm(config.d_model, eps=config.eps)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.d_model, eps=config.eps)
        self.mlp = MLP(config)

    @checked
    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    """The GPT-2 trunk (transformers' ``GPT2Model``): token ids -> final hidden states.

    The language-model head is ``wte`` itself (tied), so it adds no parameters:
    ``logits = hidden @ wte.weight.T``.
    """

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab, config.d_model)
        self.wpe = nn.Embedding(config.max_seq, config.d_model)
        self.drop = nn.Dropout(config.dropout)
        self.h = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.ln_f = nn.LayerNorm(config.d_model, eps=config.eps)
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        """GPT-2's initialisation: N(0, 0.02), residual projections scaled by 1/sqrt(2 * layers)."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)
        if isinstance(module, (CausalSelfAttention, MLP)):
            nn.init.normal_(module.c_proj.weight, std=0.02 / math.sqrt(2 * self.config.layers))

    @checked
    def forward(self, input_ids: Int[Tensor, "batch seq"]) -> Float[Tensor, "batch seq d_model"]:
        seq = input_ids.size(1)
        if seq > self.config.max_seq:
            raise ShapeError(
                f"GPT2Model.forward: input_ids.shape[1] is {seq}, but max_seq={self.config.max_seq} "
                "(learned positions end there)"
            )
        positions = torch.arange(seq, device=input_ids.device)  # (seq,)
        x = self.drop(self.wte(input_ids) + self.wpe(positions))  # (batch, seq, d_model)
        for block in self.h:
            x = block(x)
        return self.ln_f(x)  # (batch, seq, d_model)

    @checked
    def logits(self, hidden: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq vocab"]:
        """The tied language-model head: hidden states -> next-token logits."""
        return hidden @ self.wte.weight.T  # (batch, seq, d_model) x (d_model, vocab) -> (batch, seq, vocab)


__all__ = ["GPT2Config", "GPT2Model", "PRESETS", "Block", "CausalSelfAttention", "MLP"]
