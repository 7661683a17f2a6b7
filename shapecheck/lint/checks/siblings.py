"""What a statement's siblings show was meant: an assert repeated word for word where a copy was to check another
name (SC166), a block of a residual stack applied without its residual (SC167), a value computed to stand in for a
parameter that the code below still reads instead (SC168)."""

from __future__ import annotations

import ast
import builtins
import re
from typing import Iterator, Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.nodes import blocks, of_type, walk
from shapecheck.lint.scope import Scope


_ASSERT = re.compile(nm.word_first(["assert"], r"\b"))  # \bassert\b
_FOR_TUPLE = re.compile(nm.word_first(["for"], r"\b[^\n]*,[^\n]*\bin\b"))  # \bfor\b[^\n]*,[^\n]*\bin\b


@on(ev.FunctionDone, reports=("SC166",))
def repeated_assert(scope: Scope, e: ev.FunctionDone) -> None:
    """``assert isinstance(max_seqlen, int)`` twice in one block with nothing rebound between: the copy was meant
    for another name (``max_seqlen_k``), which stays unchecked."""
    func = scope.func
    if func is None or func.node is not e.node or scope.following \
            or not scope.mentions(func.node, _ASSERT):
        return
    for block in blocks(func.node):
        if sum(isinstance(stmt, ast.Assert) for stmt in block) < 2:
            continue
        seen: dict[str, ast.Assert] = {}
        for stmt in block:
            if isinstance(stmt, (ast.Return, ast.Raise)):
                break  # what follows in the block never runs
            if isinstance(stmt, ast.Assert):
                key = ast.dump(stmt.test)
                if key in seen:
                    scope.report(msg.RepeatedAssert, stmt, ast.unparse(stmt.test)[:60], seen[key].lineno)
                else:
                    seen[key] = stmt
            else:
                bound = _bound(stmt)
                seen = {k: a for k, a in seen.items() if not bound & _names(a.test)}


@on(ev.FunctionDone)
def residual_dropped(scope: Scope, e: ev.FunctionDone) -> None:
    """``for attn, cross_attn, ff in self.layers: x = attn(x) + x; x = cross_attn(x, context=c); x = ff(x) + x``:
    one block of the stack replaces the stream instead of adding to it."""
    func = scope.func
    if func is None or func.node is not e.node or scope.following:
        return
    init = func.method_of.methods.get("__init__") if func.method_of is not None else None
    if init is None or not scope.mentions(func.node, _FOR_TUPLE):
        return
    for loop in of_type(func.node, ast.For):
        if not isinstance(loop.target, ast.Tuple):
            continue  # one block per step: nothing to compare it with
        kinds = _block_classes(init, loop.target)
        if kinds is None:
            continue
        blocks = frozenset(kinds)
        applied = [(stmt, found) for stmt in _statements(loop.body) for found in [_applied(stmt, blocks)] if found]
        added = {(stream, kinds[block]) for _, (stream, block, residual) in applied if residual}
        for stmt, (stream, block, residual) in applied:
            if not residual and (stream, kinds[block]) in added:  # the same class adds its output elsewhere
                scope.report(msg.ResidualDropped, stmt, block, stream)


def _block_classes(init: ast.AST, target: ast.expr) -> Optional[dict[str, str]]:
    """``for attn, cross_attn, ff in self.layers`` where ``__init__`` appends ``ModuleList([Attention(...),
    Attention(...) if cross else None, FeedForward(...)])``: each loop name -> the class that built it."""
    tuples = [t for t in ast.walk(target) if isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts)]
    if not tuples or len(tuples[0].elts) < 2:
        return None
    names = [e.id for e in tuples[0].elts]  # type: ignore[attr-defined]
    local = {t.id: n.value for n in walk(init) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    for node in walk(init):
        if isinstance(node, ast.List) and len(node.elts) == len(names):
            kinds = [_class_of(e, local) for e in node.elts]
            if all(kinds):
                return dict(zip(names, kinds))  # type: ignore[arg-type]
    return None


def _class_of(node: ast.expr, local: dict[str, ast.expr]) -> Optional[str]:
    if isinstance(node, ast.Name) and node.id in local:
        node = local[node.id]
    if isinstance(node, ast.IfExp):
        node = node.body
    if isinstance(node, ast.Call):
        return ast.unparse(node.func)
    return None


@on(ev.FunctionDone)
def replacement_unused(scope: Scope, e: ev.FunctionDone) -> None:
    """``mask = default(attn_mask, lambda: ids != pad_id)`` never read, while ``attn_mask`` (maybe None) is what
    the call below gets: the value meant to replace the parameter is dropped."""
    func = scope.func
    if func is None or func.node is not e.node or scope.following:
        return
    params = func.params - {"self", "cls"}
    candidates = [(stmt, param) for stmt in of_type(func.node, ast.Assign) if len(stmt.targets) == 1
                  and isinstance(stmt.targets[0], ast.Name) and not stmt.targets[0].id.startswith("_")
                  for param in [stand_in_for(stmt.value, params)] if param is not None]
    if not candidates:
        return
    uses = name_uses(func.node)
    for stmt, param in candidates:
        if stands_in(stmt, param, params, uses):
            scope.report(msg.ReplacementUnused, stmt, stmt.targets[0].id, param)  # type: ignore[attr-defined]


def name_uses(func: ast.AST) -> tuple[dict[str, list[int]], dict[str, int]]:
    """(the lines each name is read on, how often each is stored) in a function."""
    loads: dict[str, list[int]] = {}
    stores: dict[str, int] = {}
    for node in of_type(func, ast.Name):
        if isinstance(node.ctx, ast.Load):
            loads.setdefault(node.id, []).append(node.lineno)
        else:
            stores[node.id] = stores.get(node.id, 0) + 1
    return loads, stores


def stands_in(stmt: ast.stmt, param: Optional[str], params: frozenset[str],
              uses: tuple[dict[str, list[int]], dict[str, int]]) -> bool:
    """``stmt`` stores, under a name stored once and never read, a stand-in for ``param``, which the code reads
    afterwards (SC168)."""
    loads, stores = uses
    if param is None or not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                             and isinstance(stmt.targets[0], ast.Name)):
        return False
    name = stmt.targets[0].id
    if name in loads or name in params or stores.get(name) != 1:
        return False
    return any(line > (stmt.end_lineno or stmt.lineno) for line in loads.get(param, ()))


# methods that give the same values in another dtype, device or shape: what they return stands in for the tensor
_RECAST = frozenset({"to", "bool", "float", "half", "long", "int", "type", "type_as", "view", "reshape", "unsqueeze",
                     "squeeze", "contiguous", "transpose", "expand", "flatten"})


def stand_in_for(value: ast.expr, params: frozenset[str]) -> Optional[str]:
    """The parameter ``value`` stands in for: ``default(p, fallback)``, ``p if p is not None else x``, ``p or x``,
    ``p.to(dtype)``, ``p.bool()``; None for anything merely computed from it."""
    if isinstance(value, ast.IfExp):
        found = [v.id for v in (value.body, value.orelse) if isinstance(v, ast.Name) and v.id in params]
        return found[0] if found else None
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or):
        found = [v.id for v in value.values if isinstance(v, ast.Name) and v.id in params]
        return found[0] if found else None
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _RECAST:
        value = value.func.value
        if isinstance(value, ast.Name):
            return value.id if value.id in params else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and len(value.args) == 2 and not value.keywords \
            and isinstance(value.args[0], ast.Name) and value.args[0].id in params \
            and not hasattr(builtins, value.func.id):  # getattr(p, name), max(p, x): Python's own, none a recast
        return value.args[0].id  # default(p, fallback), cast(p, dtype)
    return None


def _applied(stmt: ast.stmt, blocks: frozenset[str]) -> Optional[tuple[str, str, bool]]:
    """``x = blk(x, ...) + x`` -> (x, blk, True); ``x = blk(x, ...)`` -> (x, blk, False)."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return None
    stream, value = stmt.targets[0].id, stmt.value
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        for call, other in ((value.left, value.right), (value.right, value.left)):
            block = _block_call(call, blocks, stream)
            if block is not None and isinstance(other, ast.Name) and other.id == stream:
                return stream, block, True
        return None
    block = _block_call(value, blocks, stream)
    return None if block is None else (stream, block, False)


def _block_call(node: ast.expr, blocks: frozenset[str], stream: str) -> Optional[str]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in blocks and node.args \
            and isinstance(node.args[0], ast.Name) and node.args[0].id == stream:
        return node.func.id
    return None


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a loop body, those under an ``if`` included (not nested loops or functions)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _statements(stmt.body)
            yield from _statements(stmt.orelse)


def _bound(stmt: ast.stmt) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))


def _names(node: ast.AST) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
