"""Transformer-XL style memory (Dai et al. 2019, section 3.2): ``forward(h, mems=h_prev)`` attends over the earlier
segment's hidden states as extra keys and values. The property: the output equals recomputation over the
concatenation [h_prev; h], last rows, the queries' positions offset by the memory's length.

Same contract as ``properties.py``: ``check(subject, case, draw)`` returns a reason or None,
``applies(subject)`` returns why the property is skipped or None.
"""

from __future__ import annotations

from typing import Optional

import torch
from hypothesis import strategies as st
from torch import Tensor

from shapecheck.testing.adapt import Sizes, arguments, forward_parameters, read_outcome
from shapecheck.testing.compare import Draw, diff
from shapecheck.testing.probe import first_line
from shapecheck.testing.strategies import AttentionCase
from shapecheck.testing.subject import Subject
from shapecheck.vocabulary import pick


def mems_argument(s: Subject) -> Optional[str]:
    """The forward argument that carries a memory of earlier hidden states by name (``mems``), or None."""
    names = [p.name for p in forward_parameters(s.module(s.probe_shape))]
    return pick(names, "mems")


def with_memory(s: Subject, case: AttentionCase, memory: Tensor, query: Optional[Tensor] = None) -> Tensor:
    """The module called on ``query`` (the case's by default) with ``memory`` (batch, m, d_model) as its mems."""
    query = case.query if query is None else query
    module, m, n = s.module(case.shape), memory.size(1), query.size(1)
    kwargs = arguments(module, s.conv, query, causal=s.causal_mode == "flag", positions=torch.arange(m, m + n),
                       key_positions=torch.arange(m + n), sizes=Sizes(case.shape.heads, case.shape.d_head))
    kwargs[mems_argument(s)] = memory if s.conv.batch_first else memory.transpose(0, 1)  # (batch, m, d_model) or (m, batch, ...)
    return read_outcome(module(**kwargs), s.conv.batch_first, n, m + n).output


def mems(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """With mems = h_prev the output equals the last rows of one call over [h_prev; h]."""
    m = draw(st.integers(1, s.options.max_seq), "memory_length")
    shape = case.shape
    memory = torch.randn(shape.batch, m, shape.d_model, generator=torch.Generator().manual_seed(case.seed + 6))  # (batch, m, d_model)
    out = with_memory(s, case, memory)
    whole = torch.cat([memory, case.query], dim=1)  # (batch, m + seq, d_model)
    full = s.run(s.module(shape), case, query=whole, use_mask=False, causal=s.causal_mode == "flag").output[:, m:]
    found = diff(out, full)
    return (f"with a memory of {m} earlier tokens: the output differs from recomputing over memory and input together "
            f"(last {shape.seq_q} rows): {found}") if found else None


def _mems_applies(s: Subject) -> Optional[str]:
    name = mems_argument(s)
    if name is None:
        return "forward takes no memory of earlier hidden states (mems)"
    if s.conv.cross:
        return "cross-attention: a memory of earlier segments applies to self-attention"
    if s.conv.positional or s.conv.mask_required:
        return f"the module takes {s.conv.positional or 'a required mask'}: the memory's positions cannot be given to it"
    from shapecheck.testing.strategies import AttentionShape, random_inputs

    shape = AttentionShape(2, s.d_head_multiple, 2 * s.d_head_multiple, 1, 2, 2, 2 if s.grouped else None)
    query, key, value = random_inputs(shape, 0, cross=False)
    case = AttentionCase(shape, query, key, value, None, 0)
    try:
        out = with_memory(s, case, torch.randn(1, 3, shape.d_model, generator=torch.Generator().manual_seed(7)))
    except Exception as error:  # noqa: BLE001 - not hidden states: a KV cache or another protocol, not driven
        return f"{name} does not take earlier hidden states (batch, m, d_model), so it may be a KV cache: {first_line(error)}"
    if tuple(out.shape) != (1, 2, shape.d_model):
        return f"{name} given earlier hidden states (1, 3, {shape.d_model}): output {tuple(out.shape)}, not one row per input token"
    return None
