"""Hypothesis strategies for attention inputs, with the constraints built in rather than filtered.

``heads`` and ``d_head`` are drawn and ``d_model = heads * d_head``; query and key
lengths are drawn separately (1 included, ``seq_q != seq_k`` allowed for
cross-attention); key masks keep at least one visible key per batch item, and
fully masked items are a separate, explicit case. Tensors come from a drawn
integer seed, so a shrunk example is small *and* reproducible.

    >>> from hypothesis import given
    >>> @given(attention_cases(cross=True, mask=True))
    ... def test(case): ...
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch
from hypothesis import strategies as st
from jaxtyping import Bool, Float
from torch import Tensor

from shapecheck.errors import UsageError


class AttentionShape(NamedTuple):
    """Sizes of one attention call. A sample draw::

        AttentionShape(heads=2, d_head=3, d_model=6, batch=2, seq_q=4, seq_k=4)
    """

    heads: int
    d_head: int
    d_model: int  # heads * d_head, built in
    batch: int
    seq_q: int  # query positions (the output length)
    seq_k: int  # key/value positions; == seq_q for self-attention


class AttentionCase(NamedTuple):
    """One drawn input. A sample draw (tensors abbreviated)::

        AttentionCase(shape=AttentionShape(heads=2, d_head=1, d_model=2, batch=2, seq_q=3, seq_k=2),
                      query=<(2, 3, 2)>, key=<(2, 2, 2)>, value=<(2, 2, 2)>,
                      keep=tensor([[True, False], [True, True]]), seed=0)

    ``keep`` is a (batch, seq_k) key mask, True = visible, or None; ``key`` and
    ``value`` are ``query`` itself for self-attention.
    """

    shape: AttentionShape
    query: Float[Tensor, "batch seq_q d_model"]
    key: Float[Tensor, "batch seq_k d_model"]
    value: Float[Tensor, "batch seq_k d_model"]
    keep: Optional[Bool[Tensor, "batch seq_k"]]
    seed: int


def _bounds(name: str, low: int, high: int, floor: int = 1) -> None:
    for label, value in ((f"min_{name}", low), (f"max_{name}", high)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"{label}={value!r} must be an integer")
    if low < floor:
        raise UsageError(f"min_{name}={low} must be at least {floor}")
    if high < low:
        raise UsageError(f"max_{name}={high} is smaller than min_{name}={low}")


@st.composite
def attention_shapes(
    draw: st.DrawFn,
    *,
    min_heads: int = 1,
    max_heads: int = 3,
    min_d_head: int = 1,
    max_d_head: int = 4,
    min_batch: int = 1,
    max_batch: int = 3,
    min_seq: int = 1,
    max_seq: int = 5,
    cross: bool = False,
) -> AttentionShape:
    """Sizes with ``d_model = heads * d_head``; ``cross=True`` draws ``seq_k`` independently of ``seq_q``."""
    for name, low, high in (
        ("heads", min_heads, max_heads), ("d_head", min_d_head, max_d_head),
        ("batch", min_batch, max_batch), ("seq", min_seq, max_seq),
    ):
        _bounds(name, low, high)
    heads = draw(st.integers(min_heads, max_heads))
    d_head = draw(st.integers(min_d_head, max_d_head))
    batch = draw(st.integers(min_batch, max_batch))
    seq_q = draw(st.integers(min_seq, max_seq))
    seq_k = draw(st.integers(min_seq, max_seq)) if cross else seq_q
    return AttentionShape(heads, d_head, heads * d_head, batch, seq_q, seq_k)


@st.composite
def key_masks(draw: st.DrawFn, batch: int, seq_k: int, *, fully_masked: bool = False) -> Tensor:
    """A (batch, seq_k) boolean mask, True = visible.

    Every item keeps at least one visible key; with ``fully_masked=True`` item 0
    has none (the separate case of a row with nothing to attend to).
    """
    _bounds("batch", batch, batch)
    _bounds("seq_k", seq_k, seq_k)
    rows = []
    for item in range(batch):
        if fully_masked and item == 0:
            rows.append([False] * seq_k)
            continue
        visible = draw(st.integers(0, seq_k - 1))  # this key stays visible
        row = draw(st.lists(st.booleans(), min_size=seq_k, max_size=seq_k))
        rows.append([not hidden or j == visible for j, hidden in enumerate(row)])
    return torch.tensor(rows, dtype=torch.bool)


def random_inputs(shape: AttentionShape, seed: int, *, cross: bool) -> tuple[Tensor, Tensor, Tensor]:
    """Standard-normal query, key and value; key/value are the query itself unless ``cross``."""
    gen = torch.Generator().manual_seed(seed)
    query = torch.randn(shape.batch, shape.seq_q, shape.d_model, generator=gen)  # (batch, seq_q, d_model)
    if not cross:
        return query, query, query
    key = torch.randn(shape.batch, shape.seq_k, shape.d_model, generator=gen)  # (batch, seq_k, d_model)
    value = torch.randn(shape.batch, shape.seq_k, shape.d_model, generator=gen)  # (batch, seq_k, d_model)
    return query, key, value


@st.composite
def attention_cases(
    draw: st.DrawFn,
    *,
    cross: bool = False,
    mask: bool = False,
    fully_masked: bool = False,
    **bounds: int,
) -> AttentionCase:
    """A full input: sizes from ``attention_shapes(**bounds)``, tensors from a drawn seed, an optional key mask."""
    shape = draw(attention_shapes(cross=cross, **bounds))
    seed = draw(st.integers(0, 2**16))
    query, key, value = random_inputs(shape, seed, cross=cross)
    keep = draw(key_masks(shape.batch, shape.seq_k, fully_masked=fully_masked)) if mask else None
    return AttentionCase(shape, query, key, value, keep, seed)
