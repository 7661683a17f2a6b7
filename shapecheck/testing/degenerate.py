"""Properties that tell attention from modules that only look like it: a constant output, the input returned
unchanged, or uniform weights over the keys (issue 23, item 6).

Same contract as ``properties.py``. Each compares the module with itself on inputs that attention
must tell apart, and calls two outputs "the same" only when they agree to float32 rounding
(``same``), far below any difference a working attention produces on standard-normal inputs,
so a correct module with near-uniform weights is never flagged. Widths below ``MIN_WIDTH`` are not judged.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from shapecheck.testing.compare import Draw
from shapecheck.testing.strategies import AttentionCase, random_inputs
from shapecheck.testing.subject import Subject


MIN_WIDTH = 4  # below it a correct module may be constant by design: LayerNorm over 1 feature, over 2 a sign


def same(a: Tensor, b: Tensor) -> bool:
    """Equal up to float32 rounding, relative to the output's size: |a − b| ≤ 1e-5 · max |a| (+1e-12).

    Relative, so a module with small weights (GPT-2's 0.02 init gives near-uniform weights and small
    outputs) is judged by how its output moves, not by an absolute floor it never reaches."""
    a, b = a.detach().double(), b.detach().double()
    return a.shape == b.shape and bool(((a - b).abs() <= 1e-5 * a.abs().max() + 1e-12).all())


def _too_narrow(case: AttentionCase) -> bool:
    return case.shape.d_model < MIN_WIDTH


def _other(case: AttentionCase, s: Subject) -> tuple[Tensor, Tensor, Tensor]:
    return random_inputs(case.shape, case.seed + 7, cross=s.conv.cross)


def input_dependence(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """The output changes with the input (the queries; keys and values for cross-attention) and is not the input itself."""
    if _too_narrow(case):
        return None
    module = s.module(case.shape)
    base = s.run(module, case, use_mask=False).output
    query, key, value = _other(case, s)
    if not s.conv.cross and same(base, case.query):
        return "the output is the input unchanged: no attention is applied"
    if same(s.run(module, case, query=query, use_mask=False).output, base):
        return "other queries gave the same output: the module ignores its input"
    if s.conv.cross and same(s.run(module, case, key=key, value=value if not s.conv.memory_name else key, use_mask=False).output, base):
        return "another memory (keys and values) gave the same output: the module ignores what it attends to"
    return None


def content_weights(s: Subject, case: AttentionCase, draw: Draw) -> Optional[str]:
    """The weights depend on query–key content: different queries read the keys differently (uniform weights do not)."""
    if _too_narrow(case):
        return None
    module, seq = s.module(case.shape), case.shape.seq_q
    base = s.run(module, case, use_mask=False).output
    if s.conv.cross:  # one memory for every query: uniform weights give every query row the same output
        rows = base[:, :1].expand_as(base)
        return "every query gets the same output from the memory: the weights do not depend on the query (uniform attention)" if same(base, rows) else None
    swap = torch.arange(seq)
    swap[[-2, -1]] = swap[[-1, -2]]
    out = s.run(module, case, query=case.query[:, swap], use_mask=False).output
    if same(out[:, -1], base[:, -1]):
        return (f"swapping the last two of {seq} tokens left the last output unchanged: it averages its keys "
                "without weighing them by the query (uniform attention)")
    return None


