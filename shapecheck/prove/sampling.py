"""Run the exported program at sizes inside its advertised ranges, next to eager ``forward``.

``torch.export`` can specialise silently: ``Dim.AUTO`` fixes an axis at its
example size when the code needs it, and sizes 0 and 1 are traced as if they
were larger. So the proof is tested: at a few sizes per axis (1, the upper end
of the range or a cap, and random ones between) the exported program must run,
return the symbolic shape evaluated at those sizes, and agree with eager
``forward`` on shapes and values.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import Tensor, nn
from torch.utils import _pytree as pytree

from shapecheck.runtime import checks_disabled
from shapecheck.prove.constraints import bounds
from shapecheck.errors import first_line
from shapecheck.prove.inputs import InputPlan
from shapecheck.prove.symbols import Naming, expression_of

DEFAULT_CAPS = {"batch": 2, "seq": 32, "seq_q": 32, "seq_k": 32}
RTOL, ATOL = 1e-3, 1e-4


@dataclass(frozen=True)
class Sample:
    """One run: the sizes tried and the problem found there (None: it checked out)."""

    sizes: dict[str, int]
    problem: Optional[str] = None


def _range(axis: str, naming: Naming, ranges: dict, caps: dict[str, int]) -> tuple[int, int]:
    cap = caps.get(axis, DEFAULT_CAPS.get(axis, 32))
    symbol = naming.symbol_of(axis)
    if symbol is None or symbol not in ranges:  # specialised: the range the caller asked for
        return 1, cap
    lower, upper = bounds(ranges[symbol])
    low = lower if lower > 2 else 1  # export's lower bound of 2 is its 0/1 specialisation, not the code's
    return low, max(low, min(cap, upper if upper is not None else cap))


def choose_sizes(
    plan: InputPlan, naming: Naming, ranges: dict, *, count: int = 3, seed: int = 0, caps: Optional[dict[str, int]] = None
) -> list[dict[str, int]]:
    """``count`` size assignments: every free axis at its low end, random ones, then its high end."""
    free = [a for a in plan.dynamic_axes if a not in naming.equal and a not in naming.derived]
    spans = {a: _range(a, naming, ranges, caps or {}) for a in free}
    rng = random.Random(seed)
    chosen = []
    for k in range(count):
        if k == 0:
            sizes = {a: low for a, (low, _) in spans.items()}
        elif k == count - 1:
            sizes = {a: high for a, (_, high) in spans.items()}
        else:
            sizes = {a: rng.randint(low, high) for a, (low, high) in spans.items()}
        chosen.append(_complete(sizes, naming))
    return chosen


def _complete(sizes: dict[str, int], naming: Naming) -> dict[str, int]:
    """Sizes of the axes that follow from others: equal ones, derived ones."""
    values = {symbol: sizes[axis] for symbol, axis in naming.names.items() if axis in sizes}
    for axis, other in naming.equal.items():
        sizes[axis] = sizes[other]
    for axis, expr in naming.derived.items():
        sizes[axis] = int(expr.subs(values))  # type: ignore[attr-defined]
    return sizes


def _call(function: Callable[[], Any]) -> tuple[Optional[list[Tensor]], Optional[str]]:
    try:
        with torch.no_grad(), checks_disabled():
            out = function()
    except Exception as error:  # noqa: BLE001 - a failing run is the finding
        return None, first_line(error)
    return [leaf for leaf in pytree.tree_leaves(out) if isinstance(leaf, Tensor)], None


def run_sample(
    module: nn.Module, program: nn.Module, plan: InputPlan, naming: Naming, outputs: dict[str, tuple], sizes: dict[str, int]
) -> Sample:
    """Run eager ``forward`` and the exported program at ``sizes`` and compare them with the proof."""
    inputs = plan.examples(sizes)
    eager, eager_error = _call(lambda: module(**{k: v.clone() for k, v in inputs.items()}))
    exported, exported_error = _call(lambda: program(**{k: v.clone() for k, v in inputs.items()}))
    where = "sample " + ", ".join(f"{k}={v}" for k, v in sizes.items())
    if eager_error and exported_error:
        return Sample(sizes, f"{where}: forward fails inside the advertised range: {naming.text(eager_error)}")
    if exported_error:
        note = _specialisation_note(naming, sizes)
        return Sample(sizes, f"{where}: the exported program fails where forward runs{note}: {naming.text(exported_error)}")
    if eager_error:
        return Sample(sizes, f"{where}: forward fails where the exported program runs: {naming.text(eager_error)}")
    problem = _compare(eager or [], exported or [], outputs, naming, sizes)
    return Sample(sizes, f"{where}: {problem}" if problem else None)


def _specialisation_note(naming: Naming, sizes: dict[str, int]) -> str:
    fixed = [f"{a} to {v}" for a, v in naming.specialised.items() if sizes.get(a) != v]
    if fixed:
        return f" (export specialised {', '.join(fixed)})"
    ones = [a for a, v in sizes.items() if v < 2 and a not in naming.specialised]
    return f" (export traced {', '.join(ones)} as if at least 2)" if ones else ""


def _compare(
    eager: list[Tensor], exported: list[Tensor], outputs: dict[str, tuple], naming: Naming, sizes: dict[str, int]
) -> Optional[str]:
    if len(eager) != len(exported):
        return f"forward returns {len(eager)} tensors, the exported program {len(exported)}"
    values = {symbol: sizes[axis] for symbol, axis in naming.names.items() if axis in sizes}
    for (label, shape), ours, theirs in zip(outputs.items(), exported, eager):
        predicted = _evaluate(shape, values)
        if predicted is not None and tuple(ours.shape) != predicted:
            symbolic = ", ".join(str(naming.render(expression_of(s))) for s in shape)
            return f"{label} is {tuple(ours.shape)}, but the proved shape ({symbolic}) gives {predicted}"
        if ours.shape != theirs.shape:
            return f"{label} is {tuple(ours.shape)} from the exported program but {tuple(theirs.shape)} from forward"
        gap = _gap(ours, theirs)
        if gap is not None:
            return f"{label} from the exported program differs from forward's by {gap:.3g}"
    return None


def _evaluate(shape: tuple, values: dict) -> Optional[tuple[int, ...]]:
    """The symbolic shape at these sizes (None when it involves data-dependent sizes)."""
    try:
        return tuple(int(expression_of(s).subs(values)) if hasattr(s, "node") else int(s) for s in shape)
    except (TypeError, ValueError):
        return None


def _gap(ours: Tensor, theirs: Tensor) -> Optional[float]:
    """The largest difference when it exceeds the tolerance, else None."""
    if ours.numel() == 0:
        return None
    if not ours.dtype.is_floating_point:
        return None if torch.equal(ours, theirs) else float((ours != theirs).sum())
    diff = (ours.double() - theirs.double()).abs()
    limit = ATOL + RTOL * theirs.double().abs()
    both_nan = ours.isnan() & theirs.isnan()
    bad = ~(diff <= limit) & ~both_nan  # a NaN on one side only counts as a difference
    return float(diff.nan_to_num(float("inf")).max()) if bool(bad.any()) else None
