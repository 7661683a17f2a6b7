"""Positional inputs a forward may need, built for given token positions: rotary cos/sin, freqs_cis, ALiBi, biases.

Every builder takes the positions of the tokens as called (``positions``, a 1-D long
tensor, ``arange(seq)`` for an ordinary call, permuted or with gaps when a property
moves tokens) so positional modules keep each token's position through a permutation
or the removal of padding. Rotary tables come from the module's own
``*RotaryEmbedding`` class (transformers) where its Python module has one, else a
standard RoPE of the head size (Su et al. 2021, section 3.4.2, base 10000). ALiBi
slopes are the standard geometric ones (Press et al. 2022, section 3).
"""

from __future__ import annotations

import inspect
import math
import sys
from typing import Any, Optional

import torch
from torch import Tensor, nn

ROPE_BASE = 10000.0


def inverse_frequencies(d_rotary: int) -> Tensor:
    """θ_i = base^(−2i/d) for i < d/2 (float64)."""
    return 1.0 / ROPE_BASE ** (torch.arange(0, d_rotary - d_rotary % 2, 2, dtype=torch.float64) / d_rotary)


def standard_cos_sin(positions: Tensor, d_head: int, batch: int, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """(cos, sin), each (batch, seq, d_head), in the rotate-half layout: the frequencies twice, concatenated."""
    freqs = positions.double()[:, None] * inverse_frequencies(d_head)[None, :]  # (seq, d_head / 2)
    emb = torch.cat([freqs, freqs], dim=-1)  # (seq, d_head)
    return emb.cos().to(dtype).expand(batch, -1, -1), emb.sin().to(dtype).expand(batch, -1, -1)


def freqs_cis(positions: Tensor, d_head: int) -> Tensor:
    """e^{i·pos·θ}, (seq, d_head / 2) complex64: Meta's Llama layout (adjacent pairs rotate together)."""
    freqs = positions.double()[:, None] * inverse_frequencies(d_head)[None, :]  # (seq, d_head / 2)
    return torch.polar(torch.ones_like(freqs), freqs).to(torch.complex64)


def alibi_slopes(heads: int) -> Tensor:
    """The ALiBi slopes: 2^(−8i/n) for the closest power of two n, interleaved for the rest (Press et al. 2022)."""
    closest = 2 ** math.floor(math.log2(heads))
    base = [2 ** (-8 * (i + 1) / closest) for i in range(closest)]
    extra = [2 ** (-4 * (2 * i + 1) / closest) for i in range(heads - closest)]
    return torch.tensor(base + extra, dtype=torch.float64)


def alibi(positions: Tensor, heads: int, batch: int, dtype: torch.dtype) -> Tensor:
    """(batch·heads, 1, seq_k): slope_h · position_k (BLOOM's layout; a key-only bias is relative under softmax)."""
    bias = alibi_slopes(heads)[:, None] * positions.double()[None, :]  # (heads, seq_k)
    return bias[None].expand(batch, -1, -1).reshape(batch * heads, 1, -1).to(dtype)


def _own_rotary_class(module: nn.Module) -> Optional[type]:
    python_module = sys.modules.get(type(module).__module__)
    found = [v for k, v in vars(python_module or object()).items() if k.endswith("RotaryEmbedding") and inspect.isclass(v)]
    return found[0] if len(found) == 1 else None


def own_rotary(module: nn.Module) -> Optional[nn.Module]:
    """The module's rotary submodule, or one built from its Python module's ``*RotaryEmbedding`` class and its config."""
    child = next((m for m in module.modules() if type(m).__name__.endswith("RotaryEmbedding")), None)
    if child is not None:
        return child
    rotary_class, config = _own_rotary_class(module), getattr(module, "config", None)
    if rotary_class is None or config is None:
        return None
    try:
        return rotary_class(config=config)
    except Exception:  # noqa: BLE001 - a rotary class with another constructor: fall back to the standard RoPE
        return None


def rotary_cos_sin(rotary: Optional[nn.Module], positions: Tensor, d_head: int, x: Tensor) -> tuple[Tensor, Tensor]:
    """(cos, sin) for ``positions`` from the module's own rotary embedding where it has one, else the standard RoPE."""
    batch = x.size(0)
    if rotary is not None:
        try:
            cos, sin = rotary(x, positions[None].expand(batch, -1))
            return cos.to(x.dtype), sin.to(x.dtype)
        except Exception:  # noqa: BLE001 - another calling convention: the standard table
            pass
    return standard_cos_sin(positions, d_head, batch, x.dtype)


def relative_bias(module: nn.Module, positions_q: Tensor, positions_k: Tensor) -> Optional[Tensor]:
    """(1, heads, seq_q, seq_k) from the module's own ``compute_bias`` (T5), indexed at the given positions."""
    compute = getattr(module, "compute_bias", None)
    if compute is None or not getattr(module, "has_relative_attention_bias", True):
        return None
    length = int(max(positions_q.max(), positions_k.max())) + 1
    full: Tensor = compute(length, length)  # (1, heads, length, length)
    return full[:, :, positions_q][:, :, :, positions_k]


def describe(value: Any) -> str:
    """A short text of a forward argument for messages: shapes of tensors, tuples of them."""
    if isinstance(value, Tensor):
        return f"{str(value.dtype).replace('torch.', '')} {tuple(value.shape)}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(describe(v) for v in value) + ")"
    return repr(value)
