"""What a mask's entries hold, followed by data flow inside one function: booleans (``BOOL``), the numbers 0 and 1
(``ONES``: a boolean cast to a number), either of the two (``BINARY``: a cast whose target is not spelled), or an
additive bias of 0 and a large negative (``ADDITIVE``). None where the code does not say.

Sources: comparisons, ``~m``, ``logical_*``, ``.bool()``, constructors given ``dtype=torch.bool``, the body of
``if m.dtype == torch.bool:``, and a receiver filled with its own entries (``m.masked_fill(~m, v)``: masked_fill
takes only a boolean mask). Casts to a number make booleans ``ONES``; ``1 - m`` and products of 0/1 stay 0/1; a
fill, a product or a ``where`` with a large negative, or a ``log``, makes the bias. An in-place write keeps a
tensor's dtype (so a boolean stays one) but not its values (so 0/1 becomes unknown). A name stored more than once
has the kind every store agrees on.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from shapecheck.lint import names as nm
from shapecheck.lint.nodes import of_type, subtree
from shapecheck.lint.scope import Scope

BOOL, ONES, BINARY, ADDITIVE = "bool", "ones", "binary", "additive"
ZERO_ONE = frozenset({BOOL, ONES, BINARY})  # kinds whose entries are 0 and 1, whatever their dtype

_KEEPS = frozenset({"view", "reshape", "unsqueeze", "squeeze", "expand", "expand_as", "transpose", "permute",
                    "contiguous", "repeat", "repeat_interleave", "clone", "detach", "flatten", "cuda", "cpu", "tril",
                    "triu", "flip", "narrow", "select", "index_select", "gather", "t", "movedim", "swapaxes"})
_EINOPS = frozenset({"rearrange", "repeat", "reduce"})
_KEEPS_FIRST = frozenset({"tril", "triu", "pad", "flip", "roll"})  # torch.tril(m), F.pad(m, ..., value=True)
_TO_NUMBER = frozenset({"float", "half", "double", "bfloat16", "long", "int", "short", "byte", "type_as"})
_LOGICAL = frozenset({"logical_not", "logical_and", "logical_or", "logical_xor", "eq", "ne", "lt", "le", "gt", "ge",
                      "isin", "isnan", "isinf", "isfinite"})
_FACTORIES = frozenset({"zeros", "ones", "full", "empty", "tensor", "as_tensor", "zeros_like", "ones_like",
                        "full_like", "empty_like", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"})
FILLS = frozenset({"masked_fill", "masked_fill_"})
_NEGATIVE_WORDS = re.compile(r"min|inf|neg|large", re.I)
_DEVICE_WORDS = re.compile(r"device|cuda|cpu", re.I)


def large_negative(node: Optional[ast.expr]) -> bool:
    """A value that masks when added: a literal at or below -1000 (``-1e9``, ``float('-inf')``, ``finfo.min``),
    both arms of an ``x if c else y`` of such, or a name that says so, of either sign (``min_value``, ``-NEG_INF``,
    ``max_neg_value``)."""
    if isinstance(node, ast.IfExp):
        return large_negative(node.body) and large_negative(node.orelse)
    value = nm.fill_value(node)
    if value is not None:
        return value <= -1000.0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    dotted = nm.dotted(node) if node is not None else None
    return bool(dotted) and bool(_NEGATIVE_WORDS.search(dotted.split(".")[-1]))


def number(node: Optional[ast.expr]) -> Optional[float]:
    """The number a fill spells (``names.fill_value``), or, for ``a if c else b`` of two, the first arm's."""
    if isinstance(node, ast.IfExp):
        body, other = nm.fill_value(node.body), nm.fill_value(node.orelse)
        return body if body is not None and other is not None else None
    return nm.fill_value(node)


def kind(scope: Scope, node: ast.expr, depth: int = 0) -> Optional[str]:
    """The kind of entries expression ``node`` holds in the current function, at its line."""
    if depth > 12 or scope.func is None:
        return None
    again = lambda sub: kind(scope, sub, depth + 1)  # noqa: E731
    if isinstance(node, ast.Name):
        return _name(scope, node, depth)
    if isinstance(node, ast.Subscript):
        return again(node.value)
    if isinstance(node, ast.Compare):
        return None if isinstance(node.ops[0], (ast.Is, ast.IsNot, ast.In, ast.NotIn)) else BOOL
    if isinstance(node, ast.UnaryOp):
        return BOOL if isinstance(node.op, ast.Invert) else None
    if isinstance(node, ast.BinOp):
        return _binop(scope, node, depth)
    if isinstance(node, ast.Call):
        return _call(scope, node, depth)
    return None


def _binop(scope: Scope, node: ast.BinOp, depth: int) -> Optional[str]:
    left, right = kind(scope, node.left, depth + 1), kind(scope, node.right, depth + 1)
    if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return BOOL if BOOL in (left, right) else None
    if isinstance(node.op, ast.Sub) and isinstance(node.left, ast.Constant) and node.left.value == 1:
        return ONES if right in (ONES, BINARY) else None  # ``1 - m`` of booleans raises: SC177 says so
    if isinstance(node.op, ast.Mult):
        if left in ZERO_ONE and right in ZERO_ONE:
            return ONES
        if left in ZERO_ONE and large_negative(node.right) or right in ZERO_ONE and large_negative(node.left):
            return ADDITIVE
    return None


def _call(scope: Scope, node: ast.Call, depth: int) -> Optional[str]:
    again = lambda sub: kind(scope, sub, depth + 1)  # noqa: E731
    dotted = nm.dotted(node.func) or ""
    last = dotted.split(".")[-1] if dotted else (node.func.attr if isinstance(node.func, ast.Attribute) else "")
    method = isinstance(node.func, ast.Attribute) and not nm.is_namespace(node.func.value)
    receiver = node.func.value if method else (node.args[0] if node.args else None)  # type: ignore[union-attr]
    dtype = _dtype(node)
    if last in _FACTORIES:
        return BOOL if dtype == BOOL else None
    if last in _LOGICAL:
        return BOOL
    if last == "log":
        return ADDITIVE
    if last == "where" and not method and len(node.args) == 3:
        return ADDITIVE if large_negative(node.args[1]) or large_negative(node.args[2]) else None
    if receiver is None:
        return None
    inner = again(receiver)
    if last == "bool":
        return BOOL
    if last in FILLS and method:
        if inner == BOOL or own_fill(node):
            return BOOL  # a boolean tensor stays one whatever it is filled with
        return ADDITIVE if large_negative(nm.argument(node, 1, "value")) else None
    if last in ("to", "type"):
        if dtype is not None:
            return BOOL if dtype == BOOL else _as_number(inner)
        spelled = " ".join(ast.unparse(a) for a in [*node.args, *(k.value for k in node.keywords)])
        if _DEVICE_WORDS.search(spelled) and "dtype" not in spelled:
            return inner
        return BINARY if inner in (BOOL, BINARY) else _as_number(inner) if inner is not None else None
    if last in _TO_NUMBER and method:
        return _as_number(inner)
    if last in _KEEPS and method or (last in _EINOPS or last in _KEEPS_FIRST) and not method:
        return inner
    return None


def _as_number(inner: Optional[str]) -> Optional[str]:
    return ONES if inner in ZERO_ONE else inner


def own_fill(call: ast.Call) -> bool:
    """``m.masked_fill(m, v)`` or ``m.masked_fill(~m, v)``: the receiver is its own mask, so it is boolean."""
    if not isinstance(call.func, ast.Attribute):
        return False
    mask = nm.argument(call, 0, "mask")
    while isinstance(mask, ast.UnaryOp) and isinstance(mask.op, ast.Invert):
        mask = mask.operand
    if isinstance(mask, ast.Call) and isinstance(mask.func, ast.Attribute) and mask.func.attr == "logical_not":
        mask = mask.func.value
    return mask is not None and ast.dump(mask) == ast.dump(call.func.value)


def _dtype(call: ast.Call) -> Optional[str]:
    """What a ``dtype=`` (or a positional dtype of ``.to``/``.type``) names: BOOL, ONES (another torch dtype)."""
    spelled = [kw.value for kw in call.keywords if kw.arg == "dtype"]
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "type") and call.args:
        spelled.append(call.args[0])
    for value in spelled:
        text = nm.dotted(value) or ""
        if text.endswith("bool") or text == "bool":
            return BOOL
        if text.startswith("torch.") or text.endswith("dtype"):
            return ONES
    return None


def _name(scope: Scope, node: ast.Name, depth: int) -> Optional[str]:
    name, line = node.id, node.lineno
    if tested_bool(scope, name, line):
        return BOOL
    values = _stores(scope, name)
    if not values:
        return None
    if _straight(scope, name):  # the last store above the line; the parameter's own value before the first
        before = [v for v in values if (v.end_lineno or v.lineno) < line]  # type: ignore[union-attr]
        found = kind(scope, before[-1], depth + 1) if before else None  # type: ignore[arg-type]
    elif name in scope.func.params or any(v is None or _refers(v, name) for v in values):  # type: ignore[union-attr]
        return None
    else:  # stores on several branches: what they all agree on
        kinds = {kind(scope, v, depth + 1) for v in values}  # type: ignore[arg-type]
        found = kinds.pop() if len(kinds) == 1 else None
    if found is not None and found != BOOL and _mutated(scope, name):
        return None  # an in-place write keeps the dtype, not the values
    return found


def stored(scope: Scope, node: Optional[ast.expr]) -> Optional[ast.expr]:
    """``node``, or for a name stored once in the function by a plain assignment, the value stored."""
    if isinstance(node, ast.Name) and node.id not in scope.func.params:  # type: ignore[union-attr]
        values = _stores(scope, node.id)
        return values[0] if len(values) == 1 else None
    return node


def _refers(value: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in subtree(value))


def _stores(scope: Scope, name: str) -> list[Optional[ast.expr]]:
    """The values stored under ``name`` in the function, in line order; None for a store that is not a plain
    assignment of one name (a loop target, an unpacking, ``+=``)."""
    key = f"kind_stores:{id(scope.func.node)}"  # type: ignore[union-attr]
    if key not in scope.memo:
        found: dict[str, list[tuple[int, Optional[ast.expr]]]] = {}
        plain = set()
        for assign in of_type(scope.func.node, ast.Assign):  # type: ignore[union-attr]
            if len(assign.targets) == 1 and isinstance(assign.targets[0], ast.Name):
                found.setdefault(assign.targets[0].id, []).append((assign.lineno, assign.value))
                plain.add(id(assign.targets[0]))
        for stored in of_type(scope.func.node, ast.Name):  # type: ignore[union-attr]
            if isinstance(stored.ctx, ast.Store) and id(stored) not in plain:
                found.setdefault(stored.id, []).append((stored.lineno, None))
        scope.memo[key] = {n: [v for _, v in sorted(vs, key=lambda p: p[0])] for n, vs in found.items()}
    return scope.memo[key].get(name, [])  # type: ignore[union-attr]


def _straight(scope: Scope, name: str) -> bool:
    """Every store of ``name`` is a statement of the function's own body (no branch or loop holds one): the value
    at a line is the last store above it."""
    top = [s for s in scope.func.node.body  # type: ignore[union-attr]
           if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
           and s.targets[0].id == name]
    return len(top) == len(_stores(scope, name))


def _mutated(scope: Scope, name: str) -> bool:
    """Whether the function writes into ``name`` in place: an in-place method, an item store."""
    key = f"kind_mutated:{id(scope.func.node)}"  # type: ignore[union-attr]
    if key not in scope.memo:
        written = {call.func.value.id for call in of_type(scope.func.node, ast.Call)  # type: ignore[union-attr]
                   if isinstance(call.func, ast.Attribute) and call.func.attr.endswith("_")
                   and not call.func.attr.startswith("_") and isinstance(call.func.value, ast.Name)}
        written |= {item.value.id for item in of_type(scope.func.node, ast.Subscript)  # type: ignore[union-attr]
                    if isinstance(item.ctx, ast.Store) and isinstance(item.value, ast.Name)}
        scope.memo[key] = frozenset(written)
    return name in scope.memo[key]  # type: ignore[operator]


def tested_bool(scope: Scope, name: str, line: int) -> bool:
    """``line`` is in the body of ``if name.dtype == torch.bool:`` (or ``is``), and no store of ``name`` in that
    body comes before it."""
    for branch in of_type(scope.func.node, ast.If):  # type: ignore[union-attr]
        test = branch.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is))
                and nm.dotted(test.left) == f"{name}.dtype"
                and (nm.dotted(test.comparators[0]) or "").endswith("bool")):
            continue
        first, last = branch.body[0].lineno, branch.body[-1].end_lineno or branch.body[-1].lineno
        if first <= line <= last and not any(
                isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) and n.lineno < line
                for stmt in branch.body for n in subtree(stmt)):
            return True
    return False
