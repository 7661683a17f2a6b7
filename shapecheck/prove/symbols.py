"""Name export's size symbols (``s77``) after the axes they stand for (``batch``).

Each dynamic axis of the inputs is one symbol in the exported program, unless
tracing proved it equal to another axis (one symbol, two names: an equality),
fixed it to the example's size (a specialisation), or derived it from other
symbols. ``Naming`` records all three and renders shapes and expressions in the
axis vocabulary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

import sympy

from shapecheck.prove.inputs import InputPlan

Entry = Union[str, int]  # an axis name (or expression over them), or a size
_SYMBOL = re.compile(r"\b[su]\d+\b")
# x.size()[1] in guards; *kwargs['x'].shape[1] or L['x'].size()[1] in export's input checks
_POSITION = re.compile(r"(?:\*?\w*\[['\"](?P<b>\w+)['\"]\]|\b(?P<a>\w+))\.(?:size\(\)|shape)\[(?P<i>\d+)\]")


def expression_of(size: object) -> object:
    """The sympy expression behind a ``SymInt`` (or the int itself)."""
    node = getattr(size, "node", None)
    return node.expr if node is not None else int(size)  # type: ignore[call-overload]


@dataclass
class Naming:
    """Axis names for export's symbols, and what became of each requested dynamic axis."""

    names: dict[sympy.Symbol, str] = field(default_factory=dict)
    specialised: dict[str, int] = field(default_factory=dict)  # axis -> the size export fixed it at
    equal: dict[str, str] = field(default_factory=dict)  # axis -> the axis it was proven equal to
    derived: dict[str, object] = field(default_factory=dict)  # axis -> expression over other axes
    positions: dict[tuple[str, int], Entry] = field(default_factory=dict)  # (argument, dim) -> rendered size

    def render(self, expr: object) -> Entry:
        """``s77`` -> ``'batch'``, ``2*s77`` -> ``'2*batch'``, ``16`` -> ``16``."""
        if isinstance(expr, int) or getattr(expr, "is_Integer", False):
            return int(expr)  # type: ignore[call-overload]
        text = str(expr)
        return _SYMBOL.sub(lambda m: self._by_text().get(m.group(0), m.group(0)), text)

    def shape(self, sizes: object) -> list[Entry]:
        return [self.render(expression_of(s)) for s in sizes]  # type: ignore[attr-defined]

    def text(self, message: str) -> str:
        """A message with symbols (``s77``) and input sizes (``x.size()[1]``) in axis names."""
        message = _SYMBOL.sub(lambda m: self._by_text().get(m.group(0), m.group(0)), message)
        return _POSITION.sub(lambda m: self._position(m, message), message)

    def _position(self, match: re.Match, message: str) -> str:
        name = match.group("a") or match.group("b")
        size = self.positions.get((name, int(match.group("i"))))
        return str(size) if size is not None else match.group(0)

    def symbol_of(self, axis: str) -> object:
        return next((s for s, n in self.names.items() if n == axis), None)

    def _by_text(self) -> dict[str, str]:
        return {str(s): n for s, n in self.names.items()}


def name_symbols(plan: InputPlan, input_shapes: dict[str, tuple]) -> Naming:
    """Walk the inputs' dynamic axes in order and name the symbol each one became.

    An axis name met again on a symbol of its own (the code never tied the two
    together) names that symbol ``argument.axis``.
    """
    naming = Naming()
    for arg in plan.arguments:
        for axis, size in zip(arg.axes, input_shapes[arg.name]):
            if isinstance(axis, str):
                _name_one(naming, axis, expression_of(size), arg.name)
    for arg in plan.arguments:
        for index, (axis, size) in enumerate(zip(arg.axes, input_shapes[arg.name])):
            if isinstance(axis, str):  # a specialised axis keeps its name: "seq == 7", not "7 == 7"
                rendered = naming.render(expression_of(size))
                naming.positions[(arg.name, index)] = axis if isinstance(rendered, int) else rendered
    return naming


def _name_one(naming: Naming, axis: str, expr: object, argument: str) -> None:
    if axis in naming.specialised or axis in naming.equal or axis in naming.derived:
        return
    if axis in naming.names.values():
        if isinstance(expr, sympy.Symbol) and expr not in naming.names:
            naming.names[expr] = f"{argument}.{axis}"
        return
    if isinstance(expr, int) or getattr(expr, "is_Integer", False):
        naming.specialised[axis] = int(expr)  # type: ignore[call-overload]
    elif isinstance(expr, sympy.Symbol) and expr not in naming.names:
        naming.names[expr] = axis
    elif isinstance(expr, sympy.Symbol):
        naming.equal[axis] = naming.names[expr]
    else:
        naming.derived[axis] = expr

