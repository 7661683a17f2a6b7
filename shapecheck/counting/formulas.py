"""Closed-form parameter and FLOP counts, as sympy expressions in config symbols.

Every function returns a ``Cost``: ``params`` (weights and biases), ``flops``
(matrix-multiply FLOPs, **2 per multiply-add**), ``other`` (non-matmul FLOPs:
bias adds, scaling, softmax, norms, activations, residual adds), each a sympy
expression in the symbols below. MACs are ``flops / 2``.

Symbols (``SYMBOLS``; the axis names of ``shapecheck.vocabulary`` in brackets):
``h`` [heads], ``d_model``, ``d_k``, ``d_v``, ``d_ff``, ``vocab``, ``max_seq``
(rows of a learned position table), ``segments``, ``B`` [batch], ``S`` [seq],
``S_q`` / ``S_k`` [seq_q / seq_k].

Sources:
- Matmul FLOPs: a (m × k) · (k × n) product is m·n·k multiply-adds = 2·m·n·k
  FLOPs; a Linear layer therefore costs 2 FLOPs per weight per token (Kaplan et
  al. 2020, section 2.1 and Table 1: C_forward ≈ 2N per token).
- Attention (Vaswani et al. 2017, section 3.2.2): projections W_Q, W_K ∈
  R^{d_model × h·d_k}, W_V ∈ R^{d_model × h·d_v}, W_O ∈ R^{h·d_v × d_model}, so
  h·d_model·(2·d_k + 2·d_v) weights (seed 003's h·d_model·(d_q + d_k + 2·d_v)),
  plus 2·h·d_k + h·d_v + d_model biases. Logits QKᵀ: 2·B·h·S_q·S_k·d_k FLOPs,
  softmax·V: 2·B·h·S_q·S_k·d_v FLOPs (Hoffmann et al. 2022, Appendix F,
  "Key @ Query logits" and "Softmax @ query reductions", with key_size·heads
  = h·d_k).
- Feed-forward (Vaswani et al. 2017, section 3.3): two Linear layers
  d_model → d_ff → d_model.
- Non-matmul conventions (ours, stated, never compared with a peer): a bias add,
  residual add, embedding sum or scaling costs 1 FLOP per element; softmax and
  log-softmax 3 per element (Hoffmann et al. 2022, Appendix F: "Softmax:
  3 × num_heads × seq_len²"); LayerNorm 7 per element (mean, subtract, square,
  sum, normalise, gain, bias); ReLU and tanh 1, GELU 8 per element. Dropout is
  regularisation and costs 0. Causal masks do not change the count: like
  ``torch.utils.flop_counter``, the full S_q × S_k score matrix is counted.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sympy

h, d_model, d_k, d_v, d_ff, vocab, max_seq, segments = sympy.symbols(
    "h d_model d_k d_v d_ff vocab max_seq segments", positive=True, integer=True
)
B, S, S_q, S_k = sympy.symbols("B S S_q S_k", positive=True, integer=True)

SYMBOLS: dict[str, sympy.Symbol] = {
    str(s): s for s in (h, d_model, d_k, d_v, d_ff, vocab, max_seq, segments, B, S, S_q, S_k)
}

# Non-matmul FLOPs per element (see the module docstring).
SOFTMAX_FLOPS = 3  # Hoffmann et al. 2022, Appendix F
LAYER_NORM_FLOPS = 7  # mean, subtract, square, sum, normalise, gain, bias
ACTIVATION_FLOPS = {"relu": 1, "tanh": 1, "gelu": 8, "gelu_tanh": 8}

ZERO = sympy.Integer(0)


@dataclass(frozen=True)
class Cost:
    """Parameters, matmul FLOPs (2 per multiply-add) and other FLOPs of one part of a model."""

    params: sympy.Expr = ZERO
    flops: sympy.Expr = ZERO
    other: sympy.Expr = ZERO

    @property
    def macs(self) -> sympy.Expr:
        return self.flops / 2

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(self.params + other.params, self.flops + other.flops, self.other + other.other)

    def subs(self, values: dict) -> "Cost":
        return Cost(*(sympy.sympify(e).subs(values) for e in (self.params, self.flops, self.other)))


@functools.cache
def linear(d_in: sympy.Expr, d_out: sympy.Expr, tokens: sympy.Expr, bias: bool = True) -> Cost:
    """y = x Wᵀ + b over ``tokens`` rows: d_in·d_out weights (+ d_out biases), 2·tokens·d_in·d_out FLOPs."""
    return Cost(
        params=d_in * d_out + (d_out if bias else 0),
        flops=2 * tokens * d_in * d_out,
        other=tokens * d_out if bias else ZERO,
    )


@functools.cache
def attention_projections(seq_q: sympy.Expr = S, seq_k: sympy.Expr = S, bias: bool = True) -> dict[str, Cost]:
    """W_Q, W_K, W_V, W_O of multi-head attention (Vaswani et al. 2017, section 3.2.2)."""
    return {
        "q": linear(d_model, h * d_k, B * seq_q, bias),
        "k": linear(d_model, h * d_k, B * seq_k, bias),
        "v": linear(d_model, h * d_v, B * seq_k, bias),
        "o": linear(h * d_v, d_model, B * seq_q, bias),
    }


@functools.cache
def attention_scores(seq_q: sympy.Expr = S, seq_k: sympy.Expr = S) -> Cost:
    """QKᵀ per head, then the 1/√d_k scale: 2·B·h·S_q·S_k·d_k FLOPs (Hoffmann et al. 2022, App. F)."""
    return Cost(flops=2 * B * h * seq_q * seq_k * d_k, other=B * h * seq_q * seq_k)


@functools.cache
def attention_softmax(seq_q: sympy.Expr = S, seq_k: sympy.Expr = S) -> Cost:
    """Softmax over keys: 3 FLOPs per score (Hoffmann et al. 2022, App. F)."""
    return Cost(other=SOFTMAX_FLOPS * B * h * seq_q * seq_k)


@functools.cache
def attention_values(seq_q: sympy.Expr = S, seq_k: sympy.Expr = S) -> Cost:
    """softmax(·) V per head: 2·B·h·S_q·S_k·d_v FLOPs (Hoffmann et al. 2022, App. F)."""
    return Cost(flops=2 * B * h * seq_q * seq_k * d_v)


def multi_head_attention(seq_q: sympy.Expr = S, seq_k: sympy.Expr = S, bias: bool = True) -> Cost:
    """The whole block: h·d_model·(2·d_k + 2·d_v) weights + 2·h·d_k + h·d_v + d_model biases."""
    parts = [*attention_projections(seq_q, seq_k, bias).values(), attention_scores(seq_q, seq_k)]
    parts += [attention_softmax(seq_q, seq_k), attention_values(seq_q, seq_k)]
    return sum(parts, Cost())


@functools.cache
def activation(kind: str, width: sympy.Expr, tokens: sympy.Expr = None) -> Cost:
    """An elementwise activation over ``tokens`` rows of ``width``."""
    tokens = B * S if tokens is None else tokens
    return Cost(other=ACTIVATION_FLOPS[kind] * tokens * width)


@functools.cache
def feed_forward(kind: str = "relu", tokens: sympy.Expr = None) -> Cost:
    """FFN(x) = W₂ act(W₁ x + b₁) + b₂ (Vaswani et al. 2017, section 3.3)."""
    tokens = B * S if tokens is None else tokens
    return linear(d_model, d_ff, tokens) + activation(kind, d_ff, tokens) + linear(d_ff, d_model, tokens)


@functools.cache
def layer_norm(tokens: sympy.Expr = None, width: sympy.Expr = d_model) -> Cost:
    """LayerNorm with gain and bias (Ba et al. 2016): 2·width parameters, 7 FLOPs per element."""
    tokens = B * S if tokens is None else tokens
    return Cost(params=2 * width, other=LAYER_NORM_FLOPS * tokens * width)


@functools.cache
def elementwise(count: int, tokens: sympy.Expr = None, width: sympy.Expr = d_model) -> Cost:
    """``count`` elementwise adds or scalings over (tokens, width): residuals, embedding sums."""
    tokens = B * S if tokens is None else tokens
    return Cost(other=count * tokens * width)


@functools.cache
def embedding(rows: sympy.Expr, width: sympy.Expr = d_model) -> Cost:
    """A lookup table of ``rows`` vectors: rows·width parameters, no FLOPs (a gather)."""
    return Cost(params=rows * width)


@functools.cache
def log_softmax(width: sympy.Expr, tokens: sympy.Expr) -> Cost:
    """Log-softmax over ``width`` classes: 3 FLOPs per element (the softmax convention)."""
    return Cost(other=SOFTMAX_FLOPS * tokens * width)
