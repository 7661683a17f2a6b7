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
    kv_heads: Optional[int] = None  # key/value heads (grouped-query attention) where the module has them; None: heads


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


def attention_shapes(
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
    d_head_multiple: int = 1,
    grouped: bool = False,
    fewer_kv_heads: bool = False,
) -> st.SearchStrategy[AttentionShape]:
    """Sizes with ``d_model = heads * d_head``; ``cross=True`` draws ``seq_k`` independently of ``seq_q``.

    ``d_head_multiple`` (a constructor's constraint, e.g. 2 for rotary) multiplies the drawn head
    size; ``grouped=True`` draws ``kv_heads`` among the divisors of ``heads`` (grouped-query attention).

    The bounds are checked when the strategy is built (``UsageError`` naming the bad one). A sample draw::

        >>> attention_shapes(cross=True).example()  # doctest: +SKIP
        AttentionShape(heads=2, d_head=1, d_model=2, batch=2, seq_q=3, seq_k=2)
    """
    for name, low, high in (
        ("heads", min_heads, max_heads), ("d_head", min_d_head, max_d_head),
        ("batch", min_batch, max_batch), ("seq", min_seq, max_seq),
    ):
        _bounds(name, low, high)
    _bounds("d_head_multiple", d_head_multiple, d_head_multiple)
    if fewer_kv_heads:
        min_heads, max_heads, grouped = max(2, min_heads), max(4, max_heads), True  # 4 heads, 2 kv heads: order matters
    return _attention_shapes((min_heads, max_heads), (min_d_head, max_d_head), (min_batch, max_batch), (min_seq, max_seq), cross,
                             d_head_multiple, grouped, fewer_kv_heads)


@st.composite
def _attention_shapes(
    draw: st.DrawFn, heads_range: tuple[int, int], d_head_range: tuple[int, int], batch_range: tuple[int, int],
    seq_range: tuple[int, int], cross: bool, d_head_multiple: int = 1, grouped: bool = False, fewer_kv_heads: bool = False,
) -> AttentionShape:
    # grouped-query cases: 4 heads over 2 kv heads first (where repeat and tile orders differ), then 6 and 2
    heads = draw(st.sampled_from([4, 6, 2]) if fewer_kv_heads else st.integers(*heads_range))
    d_head = draw(st.integers(*d_head_range)) * d_head_multiple
    batch = draw(st.integers(*batch_range))
    seq_q = draw(st.integers(*seq_range))
    seq_k = draw(st.integers(*seq_range)) if cross else seq_q
    divisors = [k for k in range(heads - 1 if fewer_kv_heads else heads, 0, -1) if heads % k == 0]
    kv_heads = draw(st.sampled_from(divisors)) if grouped else None
    return AttentionShape(heads, d_head, heads * d_head, batch, seq_q, seq_k, kv_heads)


def key_masks(batch: int, seq_k: int, *, fully_masked: bool = False) -> st.SearchStrategy[Bool[Tensor, "batch seq_k"]]:
    """A (batch, seq_k) boolean mask, True = visible.

    Every item keeps at least one visible key; with ``fully_masked=True`` item 0
    has none (the separate case of a row with nothing to attend to). A sample draw::

        >>> key_masks(2, 3).example()  # doctest: +SKIP
        tensor([[ True,  True,  True],
                [ True,  True, False]])
    """
    for name, value in (("batch", batch), ("seq_k", seq_k)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"{name}={value!r} must be an integer")
        if value < 1:
            raise UsageError(f"{name}={value} must be at least 1")
    return _key_masks(batch, seq_k, fully_masked)


@st.composite
def _key_masks(draw: st.DrawFn, batch: int, seq_k: int, fully_masked: bool) -> Tensor:
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


_BOUND_NAMES = tuple(f"{end}_{name}" for name in ("heads", "d_head", "batch", "seq") for end in ("min", "max")) + ("d_head_multiple", "grouped", "fewer_kv_heads")


def attention_cases(
    *, cross: bool = False, mask: bool = False, fully_masked: bool = False, **bounds: int
) -> st.SearchStrategy[AttentionCase]:
    """A full input: sizes from ``attention_shapes(**bounds)``, tensors from a drawn seed, an optional key mask.

    ``bounds`` are ``attention_shapes``' keywords (``max_heads=2``, ``max_seq=4``, ...),
    checked when the strategy is built. A sample draw (tensors abbreviated)::

        >>> attention_cases(cross=True, mask=True).example()  # doctest: +SKIP
        AttentionCase(shape=AttentionShape(heads=1, d_head=1, d_model=1, batch=2, seq_q=1, seq_k=2),
                      query=<(2, 1, 1)>, key=<(2, 2, 1)>, value=<(2, 2, 1)>,
                      keep=tensor([[True, True], [False, True]]), seed=0)
    """
    unknown = sorted(set(bounds) - set(_BOUND_NAMES))
    if unknown:
        raise UsageError(f"attention_cases got unknown bounds {', '.join(unknown)} (choose from {', '.join(_BOUND_NAMES)})")
    if fully_masked and not mask:
        raise UsageError("fully_masked=True needs mask=True")
    return _attention_cases(attention_shapes(cross=cross, **bounds), cross, mask, fully_masked)


@st.composite
def _attention_cases(
    draw: st.DrawFn, shapes: st.SearchStrategy[AttentionShape], cross: bool, mask: bool, fully_masked: bool
) -> AttentionCase:
    shape = draw(shapes)
    seed = draw(st.integers(0, 2**16))
    query, key, value = random_inputs(shape, seed, cross=cross)
    keep = draw(_key_masks(shape.batch, shape.seq_k, fully_masked)) if mask else None
    return AttentionCase(shape, query, key, value, keep, seed)
