"""The small layers the seed posts build BERT from: two LayerNorms, GELU, feed-forward, residual.

- ``LayerNorm``: TF style, eps inside the square root (seed 000; BERT as released).
  Equal to ``nn.LayerNorm(d_model, eps)``.
- ``StdLayerNorm``: seed 001's (and the Annotated Transformer's) variant, which
  divides by the *unbiased* standard deviation plus eps, eps outside the root:

      StdLayerNorm(x) = w · (x − μ) / (s + eps) + b,   s = sqrt(Σ(x − μ)² / (n − 1))
      nn.LayerNorm(x) = w · (x − μ) / sqrt(σ² + eps) + b,   σ² = Σ(x − μ)² / n

  so s = σ·sqrt(n / (n − 1)) and, with eps = 0 in both, the normalised values
  differ by the constant factor ``std_layer_norm_scale(n)`` = sqrt((n − 1) / n):
  0.935 for n = 8, 0.99902 for n = 512, 0.99935 for n = 768. Outputs are
  therefore not interchangeable with ``nn.LayerNorm``: at n = 8 they differ by
  6.5% of each normalised value.
- ``gelu_tanh`` / ``GELU``: the tanh approximation of GELU (Hendrycks & Gimpel
  2016, section 2; seed 001), equal to ``F.gelu(x, approximate="tanh")``.
- ``PositionwiseFeedForward``: FFN(x) = W₂ · act(W₁ x + b₁) + b₂ (Vaswani et al.
  2017, section 3.3; seed 001's ``PositionwiseFeedForward``).
- ``SublayerConnection``: seed 001's pre-norm residual, x + dropout(sublayer(norm(x))).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor, nn

from shapecheck import checked
from shapecheck.config import require_choice, require_positive, require_probability
from shapecheck.errors import ConfigError, ShapeError

ACTIVATIONS = ("gelu", "gelu_tanh", "relu")


@dataclass(frozen=True)
class NormConfig:
    """The width a LayerNorm normalises over, and its epsilon."""

    d_model: int = 768  # normalised (last) axis
    eps: float = 1e-12  # added to the variance (LayerNorm) or to the std (StdLayerNorm)

    def __post_init__(self) -> None:
        require_positive(self, "d_model")
        if isinstance(self.eps, bool) or not isinstance(self.eps, (int, float)) or self.eps < 0:
            raise ConfigError(f"{type(self).__name__}: eps={self.eps!r} must be a number >= 0")


def std_layer_norm_scale(d_model: int) -> float:
    """sqrt((n − 1) / n): StdLayerNorm's normalised values over nn.LayerNorm's, both with eps = 0."""
    return math.sqrt((d_model - 1) / d_model)


class LayerNorm(nn.Module):
    """TF-style LayerNorm (seed 000): w · (x − μ) / sqrt(σ² + eps) + b, σ² the biased variance."""

    def __init__(self, d_model: int, eps: float = 1e-12) -> None:
        super().__init__()
        self.config = NormConfig(d_model, eps)
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    @checked
    def forward(self, x: Float[Tensor, "*batch d_model"]) -> Float[Tensor, "*batch d_model"]:
        dtype = x.dtype
        if dtype in (torch.float16, torch.bfloat16):
            x = x.float()  # eps=1e-12 rounds to 0 in half precision: normalise in float32
        mean = x.mean(-1, keepdim=True)  # (*batch, 1)
        var = (x - mean).pow(2).mean(-1, keepdim=True)  # (*batch, 1), biased
        normed = ((x - mean) / torch.sqrt(var + self.config.eps)).to(dtype)
        return self.weight * normed + self.bias


class StdLayerNorm(nn.Module):
    """Seed 001's LayerNorm: w · (x − μ) / (s + eps) + b, s the unbiased std, eps outside the root.

    Not equal to ``nn.LayerNorm``: see the module docstring and ``std_layer_norm_scale``.
    The seed names the parameters ``a_2`` and ``b_2``; here they are ``weight`` and ``bias``.
    """

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.config = NormConfig(d_model, eps)
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    @checked
    def forward(self, x: Float[Tensor, "*batch d_model"]) -> Float[Tensor, "*batch d_model"]:
        mean = x.mean(-1, keepdim=True)  # (*batch, 1)
        std = x.std(-1, keepdim=True)  # (*batch, 1), unbiased (divides by n - 1)
        return self.weight * (x - mean) / (std + self.config.eps) + self.bias


def gelu_tanh(x: Float[Tensor, "*batch"]) -> Float[Tensor, "*batch"]:
    """GELU(x) ≈ 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))) (seed 001)."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


class GELU(nn.Module):
    """Seed 001's GELU module: the tanh approximation, elementwise."""

    @checked
    def forward(self, x: Float[Tensor, "*batch"]) -> Float[Tensor, "*batch"]:
        return gelu_tanh(x)


def activation(name: str) -> Callable[[Tensor], Tensor]:
    """The activation function for a config's ``activation`` field."""
    return {"gelu": F.gelu, "gelu_tanh": gelu_tanh, "relu": F.relu}[name]


@dataclass(frozen=True)
class FeedForwardConfig:
    """Sizes of the position-wise feed-forward network."""

    d_model: int = 768  # input and output width
    d_ff: int = 3072  # inner width (4·d_model in BERT and the Transformer)
    dropout: float = 0.0  # dropout on the inner activations (seed 001)
    activation: str = "gelu"  # "gelu" (erf, BERT as released), "gelu_tanh" (seed 001), "relu" (Vaswani)

    def __post_init__(self) -> None:
        require_positive(self, "d_model", "d_ff")
        require_probability(self, "dropout")
        require_choice(self, "activation", ACTIVATIONS)


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = W₂ · dropout(act(W₁ x + b₁)) + b₂, applied at every position (seed 001)."""

    def __init__(self, config: FeedForwardConfig) -> None:
        super().__init__()
        self.config = config
        self.w_1 = nn.Linear(config.d_model, config.d_ff)
        self.w_2 = nn.Linear(config.d_ff, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.activation = activation(config.activation)

    @checked
    def forward(self, x: Float[Tensor, "*batch d_model"]) -> Float[Tensor, "*batch d_model"]:
        hidden = self.activation(self.w_1(x))  # (*batch, d_ff)
        return self.w_2(self.dropout(hidden))  # (*batch, d_ff) -> (*batch, d_model)


@dataclass(frozen=True)
class SublayerConfig:
    """Width and dropout of a pre-norm residual connection."""

    d_model: int = 768
    dropout: float = 0.0  # dropout on the sublayer's output, before the residual add

    def __post_init__(self) -> None:
        require_positive(self, "d_model")
        require_probability(self, "dropout")


class SublayerConnection(nn.Module):
    """Seed 001's pre-norm residual: x + dropout(sublayer(norm(x))), norm = ``StdLayerNorm``.

    The sublayer must map (*batch, d_model) to (*batch, d_model); the residual adds its output to x.
    """

    def __init__(self, d_model: int, dropout: float = 0.0, eps: float = 1e-6) -> None:
        super().__init__()
        self.config = SublayerConfig(d_model, dropout)
        self.norm = StdLayerNorm(d_model, eps)
        self.dropout = nn.Dropout(dropout)

    @checked
    def forward(
        self, x: Float[Tensor, "*batch d_model"], sublayer: Callable[[Tensor], Tensor]
    ) -> Float[Tensor, "*batch d_model"]:
        out = sublayer(self.norm(x))  # (*batch, d_model)
        if not isinstance(out, Tensor) or out.shape != x.shape:
            got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise ShapeError(
                f"SublayerConnection.forward: the sublayer returned {got}, "
                f"but the residual adds it to x of shape {tuple(x.shape)}"
            )
        return x + self.dropout(out)
