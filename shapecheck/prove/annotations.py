"""Compare ``forward``'s return annotation with the exported program's symbolic output shapes.

The annotation's axis names are bound from the config (``d_model=16``) and the
arguments' symbolic shapes (``batch=s77``); the returned shape must then equal
the annotation's for every size, not just at the example sizes::

    Transposed.forward: the return value is (seq, batch, 16) for every size,
    but its annotation "batch seq d_model" says (batch, seq, 16)
"""

from __future__ import annotations

from typing import Any, Optional

import sympy
from torch import nn

from shapecheck.runtime import config_axes
from shapecheck.prove.inputs import forward_hints
from shapecheck.prove.symbols import Naming, expression_of
from shapecheck.shapes import ANON_VARIADIC, EXPR, FIXED, NAMED, VARIADIC, ArraySpec, return_specs, spec_of


def annotation_problems(
    module: nn.Module, naming: Naming, inputs: dict[str, tuple], outputs: dict[str, tuple]
) -> list[str]:
    """One message per returned tensor whose symbolic shape contradicts its annotation."""
    hints = forward_hints(module)
    memo: dict[str, Any] = {k: sympy.Integer(v) for k, v in config_axes(module).items()}
    for name, shape in inputs.items():
        spec = spec_of(hints.get(name))
        if spec is not None:
            expected_shape(spec, [expression_of(s) for s in shape], memo)
    qualname = f"{type(module).__name__}.forward"
    problems = []
    for label, spec, shape in _pairs(hints.get("return"), outputs):
        actual = [expression_of(s) for s in shape]
        expected = expected_shape(spec, actual, memo)
        if expected is None or not _same(expected, actual):
            problems.append(_message(qualname, label, spec, expected, actual, naming))
    return problems


def _pairs(annotation: object, outputs: dict[str, tuple]) -> list[tuple[str, ArraySpec, tuple]]:
    """(label, spec, shape) for each output the annotation describes."""
    items = list(outputs.items())
    for alternative in return_specs(annotation):
        if isinstance(alternative, ArraySpec) and len(items) == 1:
            return [("the return value", alternative, items[0][1])]
        if isinstance(alternative, tuple) and len(alternative) == len(items):
            return [(f"return value {label}", spec, shape) for (label, shape), spec in zip(items, alternative) if spec]
    return []


def expected_shape(spec: ArraySpec, actual: list[Any], memo: dict[str, Any]) -> Optional[list[Any]]:
    """The shape the annotation asks for, binding unbound names from ``actual``; None if ranks differ."""
    if spec.variadic:
        star = next(i for i, d in enumerate(spec.dims) if d.kind in (VARIADIC, ANON_VARIADIC))
        after = len(spec.dims) - star - 1
        if len(actual) < len(spec.dims) - 1:
            return None
        middle = list(actual[star : len(actual) - after])
        name = spec.dims[star].name
        if spec.dims[star].kind == VARIADIC:
            middle = list(memo.setdefault(f"*{name}", tuple(middle)))
        head = _dims(spec.dims[:star], actual[:star], memo)
        tail = _dims(spec.dims[star + 1 :], actual[len(actual) - after :], memo)
        return head + middle + tail
    if len(actual) != len(spec.dims):
        return None
    return _dims(spec.dims, actual, memo)


def _dims(dims: tuple, actual: list[Any], memo: dict[str, Any]) -> list[Any]:
    expected = []
    for dim, size in zip(dims, actual):
        if dim.broadcast and size == 1:
            expected.append(size)
        elif dim.kind == NAMED:
            expected.append(memo.setdefault(dim.name, size))
        elif dim.kind == FIXED:
            expected.append(sympy.Integer(dim.size))
        elif dim.kind == EXPR:
            expected.append(_evaluate(dim.name, memo, size))
        else:  # ANON
            expected.append(size)
    return expected


def _evaluate(text: str, memo: dict[str, Any], default: Any) -> Any:
    try:
        return sympy.sympify(eval(text, {"__builtins__": {}}, dict(memo)))  # noqa: S307 - annotation text
    except Exception:  # noqa: BLE001 - names the memo lacks
        return default


_POINTS = (2, 3, 4, 7, 8, 12, 16, 33)  # sizes at which two expressions over the axes are compared


def _same(expected: list[Any], actual: list[Any]) -> bool:
    return len(expected) == len(actual) and all(_equal(sympy.sympify(e), sympy.sympify(a)) for e, a in zip(expected, actual))


def _equal(expected: Any, actual: Any) -> bool:
    """Equal wherever the annotation gives a whole size (``seq/2`` and ``seq//2`` agree for even seq)."""
    if sympy.simplify(expected - actual) == 0:
        return True
    symbols = sorted(expected.free_symbols | actual.free_symbols, key=str)
    compared = False
    for k in range(len(_POINTS)):
        point = {s: _POINTS[(k + 3 * i) % len(_POINTS)] for i, s in enumerate(symbols)}
        want, got = expected.subs(point), actual.subs(point)
        if not (want.is_Integer and got.is_Integer):
            continue
        if want != got:
            return False
        compared = True
    return compared


def _message(qualname: str, label: str, spec: ArraySpec, expected: Optional[list], actual: list, naming: Naming) -> str:
    got = _shape_text(actual, naming)
    if expected is None:
        return f"{qualname}: {label} is {got} for every size, but its annotation \"{spec.text}\" has {len(spec.dims)} axes"
    return f"{qualname}: {label} is {got} for every size, but its annotation \"{spec.text}\" says {_shape_text(expected, naming)}"


def _shape_text(shape: list[Any], naming: Naming) -> str:
    return "(" + ", ".join(str(naming.render(s)) for s in shape) + ")"

