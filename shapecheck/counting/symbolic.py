"""A report whose FLOPs are polynomials in a named sequence length (``--seq-len S``).

The model is measured at S = 1, 2, 3, 4 and each row's FLOPs (measured and closed form) are
interpolated: exact for any polynomial of degree <= 3 in S, which every op the dispatch counter
knows is (attention is quadratic). Per-token figures and memory need a numeric length and are left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Optional, Union

import sympy

from shapecheck.counting.tree import ModelReport, Row, Settings, model_report

POINTS = (1, 2, 3, 4)


def _fit(values: list[Any], symbol: sympy.Symbol) -> Any:
    if any(v is None for v in values):
        return None
    poly = sympy.expand(sympy.interpolate(list(zip(POINTS, values)), symbol))
    return int(poly) if poly.is_Integer else poly


def _renamed(formula: Any, name: str) -> Any:
    return re.sub(r"(?<![A-Za-z_])S(?![A-Za-z_0-9])", name, formula) if isinstance(formula, str) else formula


def _row(rows: list[Row], symbol: sympy.Symbol) -> Row:
    first = rows[0]
    return replace(first, flops=_fit([r.flops for r in rows], symbol),
                   expected_flops=_fit([r.expected_flops for r in rows], symbol), fvcore_macs=None,
                   flops_formula=_renamed(first.flops_formula, symbol.name))


def interpolated(report_at: Callable[[int], ModelReport], name: str) -> ModelReport:
    """``report_at(n)`` is the report at length n; the result has every FLOP figure as a polynomial in ``name``."""
    symbol = sympy.Symbol(name, positive=True, integer=True)
    reports = [report_at(n) for n in POINTS]
    base = reports[0]
    rows = [_row(list(group), symbol) for group in zip(*(r.rows for r in reports))]
    flops = _fit([r.total["flops"] for r in reports], symbol)
    total = {"params": base.total["params"], "active_params": base.total["active_params"], "flops": flops,
             "macs": sympy.expand(flops / 2) if not isinstance(flops, int) else flops // 2}
    notes = [n for n in base.notes if not n.startswith("memory:")]
    notes.append(f"measured at {name} = {', '.join(map(str, POINTS))} and interpolated (exact up to degree 3); "
                 "per-token figures and memory need a numeric --seq-len")
    return replace(base, settings=replace(base.settings, seq_len=name), rows=rows, total=total, memory={},
                   per_token={}, notes=notes)


def report_at(module: Any, name: str, settings: Settings, length: Union[int, str], feed: Optional[Any] = None,
              fvcore: bool = False) -> ModelReport:
    """The model report at ``length`` tokens, or (a name such as "S") with every FLOP figure a polynomial in it."""
    if isinstance(length, str):
        return interpolated(lambda n: model_report(module, name, replace(settings, seq_len=n), feed), length)
    return model_report(module, name, replace(settings, seq_len=length), feed, fvcore)
