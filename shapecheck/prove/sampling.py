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
    """One run: the sizes tried and the problem found there (None: it checked out).

    ``kind`` says why it ran: ``low`` (every axis at 1), ``two`` (below a claimed
    lower bound), ``middle``, ``top`` (the found bound or the cap), ``past``
    (one past a found bound: forward must fail there, ``note`` says how).
    """

    sizes: dict[str, int]
    problem: Optional[str] = None
    kind: str = "middle"
    note: str = ""
    eager_ran: bool = False


def spans(plan: InputPlan, naming: Naming, ranges: dict, caps: Optional[dict[str, int]]) -> dict[str, tuple[int, int]]:
    """(low, high) of each free axis: 1 (or the code's lower bound) up to the range's top or the cap."""
    return {a: _range(a, naming, ranges, caps or {}) for a in free_axes(plan, naming)}


def free_axes(plan: InputPlan, naming: Naming) -> list[str]:
    return [a for a in plan.dynamic_axes if a not in naming.equal and a not in naming.derived]


def _range(axis: str, naming: Naming, ranges: dict, caps: dict[str, int]) -> tuple[int, int]:
    cap = caps.get(axis, DEFAULT_CAPS.get(axis, 32))
    symbol = naming.symbol_of(axis)
    if symbol is None or symbol not in ranges:  # specialised: the range the caller asked for
        return 1, cap
    lower, upper = bounds(ranges[symbol])
    low = lower if lower > 2 else 1  # export's lower bound of 2 is its 0/1 specialisation, not the code's
    return low, max(low, min(cap, upper if upper is not None else cap))


def choose_sizes(
    spans_: dict[str, tuple[int, int]], tops: dict[str, int], naming: Naming, *, count: int = 3, seed: int = 0,
    caps: Optional[dict[str, int]] = None,
) -> list[tuple[str, dict[str, int]]]:
    """(kind, sizes) for ``count`` runs: every axis at 1, random middles, then every axis at its top.

    ``tops`` are the found bounds (a bounded run keeps the other axes at 1, so it stays cheap).
    A claimed lower bound above 2 adds a run at 2 below it, so no false lower bound stands.
    """
    rng = random.Random(seed)
    chosen: list[tuple[str, dict[str, int]]] = []
    if count >= 1:
        chosen.append(("low", {a: 1 for a in spans_}))
    if any(low > 2 for low, _ in spans_.values()):
        chosen.append(("two", {a: min(2, high) for a, (_, high) in spans_.items()}))
    for _ in range(max(0, count - 2)):
        capped = {a: (low, min(high, max(low, (caps or {}).get(a, DEFAULT_CAPS.get(a, 32))))) for a, (low, high) in spans_.items()}
        chosen.append(("middle", {a: high if a == "batch" else rng.randint(low, high) for a, (low, high) in capped.items()}))
    if count >= 2:
        top = {a: tops.get(a, high) if not tops or a in tops else 1 if a == "batch" else high for a, (_, high) in spans_.items()}
        chosen.append(("top", top))
    return [(kind, _complete(dict(sizes), naming)) for kind, sizes in _unique(chosen)]


def _unique(chosen: list[tuple[str, dict[str, int]]]) -> list[tuple[str, dict[str, int]]]:
    kept: dict[tuple, tuple[str, dict[str, int]]] = {}
    for kind, sizes in chosen:
        key = tuple(sorted(sizes.items()))
        kept[key] = (kind if key not in kept or kind == "top" else kept[key][0], sizes)  # a middle at the top is the top
    return list(kept.values())


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


def eager_error(module: nn.Module, plan: InputPlan, sizes: dict[str, int]) -> Optional[str]:
    """None when ``forward`` runs at ``sizes``, else its error in one line."""
    return _call(lambda: module(**plan.call(plan.examples(sizes))))[1]


def _where(sizes: dict[str, int]) -> str:
    return "sample " + ", ".join(f"{k}={v}" for k, v in sizes.items())


def run_program(program: nn.Module, plan: InputPlan, naming: Naming, outputs: dict[str, tuple], sizes: dict[str, int],
                kind: str = "top") -> Sample:
    """Run only the exported program (large sizes: eager is not run twice) and check its shapes against the proof."""
    exported, error = _call(lambda: program(**plan.call(plan.examples(sizes))))
    if error:
        return Sample(sizes, f"{_where(sizes)}: the exported program fails inside the advertised range: {naming.text(error)}", kind)
    problem = _predicted(exported or [], outputs, naming, sizes)
    return Sample(sizes, f"{_where(sizes)}: {problem}" if problem else None, kind)


def run_sample(
    module: nn.Module, program: nn.Module, plan: InputPlan, naming: Naming, outputs: dict[str, tuple], sizes: dict[str, int],
    kind: str = "middle",
) -> Sample:
    """Run eager ``forward`` and the exported program at ``sizes`` and compare them with the proof."""
    inputs = plan.examples(sizes)
    eager, eager_error = _call(lambda: module(**plan.call({k: v.clone() for k, v in inputs.items()})))
    exported, exported_error = _call(lambda: program(**plan.call({k: v.clone() for k, v in inputs.items()})))
    where, ran = _where(sizes), eager_error is None
    if eager_error and exported_error:
        return Sample(sizes, f"{where}: forward fails inside the advertised range: {naming.text(eager_error)}", kind)
    if exported_error:
        note = _specialisation_note(naming, sizes)
        return Sample(sizes, f"{where}: the exported program fails where forward runs{note}: {naming.text(exported_error)}", kind, eager_ran=ran)
    if eager_error:
        return Sample(sizes, f"{where}: forward fails where the exported program runs: {naming.text(eager_error)}", kind)
    problem = _compare(eager or [], exported or [], outputs, naming, sizes)
    return Sample(sizes, f"{where}: {problem}" if problem else None, kind, eager_ran=ran)


def _specialisation_note(naming: Naming, sizes: dict[str, int]) -> str:
    fixed = [f"{a} to {v}" for a, v in naming.specialised.items() if sizes.get(a) != v]
    if fixed:
        return f" (export specialised {', '.join(fixed)})"
    ones = [a for a, v in sizes.items() if v < 2 and a not in naming.specialised]
    return f" (export traced {', '.join(ones)} as if at least 2)" if ones else ""


def _predicted(exported: list[Tensor], outputs: dict[str, tuple], naming: Naming, sizes: dict[str, int]) -> Optional[str]:
    """The first output whose shape is not the proved shape at these sizes."""
    values = {symbol: sizes[axis] for symbol, axis in naming.names.items() if axis in sizes}
    for (label, shape), ours in zip(outputs.items(), exported):
        predicted = _evaluate(shape, values)
        if predicted is not None and tuple(ours.shape) != predicted:
            symbolic = ", ".join(str(naming.render(expression_of(s))) for s in shape)
            return f"{label} is {tuple(ours.shape)}, but the proved shape ({symbolic}) gives {predicted}"
    return None


def _compare(
    eager: list[Tensor], exported: list[Tensor], outputs: dict[str, tuple], naming: Naming, sizes: dict[str, int]
) -> Optional[str]:
    if len(eager) != len(exported):
        return f"forward returns {len(eager)} tensors, the exported program {len(exported)}"
    wrong = _predicted(exported, outputs, naming, sizes)
    if wrong:
        return wrong
    for (label, _), ours, theirs in zip(outputs.items(), exported, eager):
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
