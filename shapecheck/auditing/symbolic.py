"""Formulas as text and dimensions as symbols: ``4*d_model**2`` -> ``4·d_model²``, 768 -> ``d_model``.

The symbols are those of ``shapecheck.counting.formulas`` (``h``, ``d_model``,
``d_k``, ``d_v``, ``d_ff``, ``vocab``, ``max_seq``, ``segments``); audit adds
``kdim``/``vdim`` (key and value input widths of cross-attention), ``h_kv``
(key/value heads of grouped-query attention), ``E`` (a factorised embedding's
width, ALBERT), ``experts`` (a mixture of experts), ``buckets`` (T5's relative positions) and the
compound ``h·d_k``/``h·d_v`` for blocks whose head count it cannot read.
"""

from __future__ import annotations

import sympy

from shapecheck.counting.formulas import SYMBOLS

kdim, vdim, h_kv, E, experts, buckets = sympy.symbols("kdim vdim h_kv E experts buckets", positive=True, integer=True)
hd_k, hd_v = sympy.Symbol("h·d_k", positive=True, integer=True), sympy.Symbol("h·d_v", positive=True, integer=True)
ALL_SYMBOLS: dict[str, sympy.Symbol] = {**SYMBOLS, "kdim": kdim, "vdim": vdim, "h_kv": h_kv, "E": E, "experts": experts, "buckets": buckets, "h·d_k": hd_k, "h·d_v": hd_v}

class Dims:
    """Names for sizes: a value registered as ``d_model`` is shown as ``d_model`` wherever it appears."""

    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def add(self, name: str, value: int) -> None:
        """Name ``value``; a name already given to another value keeps it (two widths keep two symbols)."""
        if name not in self.names.values():
            self.names.setdefault(int(value), name)

    def symbol(self, value: int) -> sympy.Expr:
        name = self.names.get(int(value))
        return ALL_SYMBOLS[name] if name else sympy.Integer(value)

    def values(self, expr: sympy.Expr) -> dict[str, int]:
        """The value of each symbol ``expr`` uses (for showing next to the formula)."""
        by_name = {name: value for value, name in self.names.items()}
        return {str(s): by_name[str(s)] for s in sorted(expr.free_symbols, key=str) if str(s) in by_name}
