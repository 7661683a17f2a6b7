"""The constraints an exported program imposes, as short strings in the axis vocabulary.

Sources, in the order they are listed:
- the range of each size symbol (``seq <= 512`` from a check against learned
  positions); export's own lower bound of 2 (its 0/1 specialisation) is not a
  constraint of the code and is left out;
- axes tracing proved equal (``seq_k == seq_q``) or derived from others;
- axes fixed at their example size (``seq == 6``): a silent specialisation.
"""

from __future__ import annotations

from typing import Any

import sympy
import torch

from shapecheck.prove.symbols import Naming

_EXPORT_LOWER_BOUND = 2  # Dim.AUTO's range starts at 2 (sizes 0 and 1 are specialised apart)


def bounds(value_range: Any) -> tuple[int, int | None]:
    """``(lower, upper)`` of a value range; ``upper`` is None when unbounded."""
    lower = int(value_range.lower) if isinstance(value_range.lower, sympy.Integer) else 0
    upper = int(value_range.upper) if isinstance(value_range.upper, sympy.Integer) else None
    return lower, upper


def range_constraints(naming: Naming, ranges: dict) -> list[str]:
    """``seq <= 512``, ``batch >= 4``: bounds the code put on each named symbol."""
    found = []
    for symbol, axis in naming.names.items():
        if symbol not in ranges:
            continue
        lower, upper = bounds(ranges[symbol])
        if lower > _EXPORT_LOWER_BOUND:
            found.append(f"{axis} >= {lower}")
        if upper is not None:
            found.append(f"{axis} <= {upper}")
    return found


def relation_constraints(naming: Naming) -> list[str]:
    """Equalities, derived axes and specialisations recorded while naming symbols."""
    found = [f"{axis} == {other}" for axis, other in naming.equal.items()]
    found += [f"{axis} == {naming.render(expr)}" for axis, expr in naming.derived.items()]
    found += [f"{axis} == {size}" for axis, size in naming.specialised.items()]
    return found


def all_constraints(program: torch.export.ExportedProgram, naming: Naming) -> list[str]:
    found = range_constraints(naming, program.range_constraints) + relation_constraints(naming)
    return list(dict.fromkeys(found))
