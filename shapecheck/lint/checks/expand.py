"""Reshapes and expansions that contradict what a value already is: one name reshaped twice on one path (SC153),
keys or values expanded to the queries' shape (SC154).

Both are found from the calls the evaluator meets (``ev.NamedCall``): a candidate is recorded per function, and
only a function that has one is read again when its body is done, so the rest cost nothing.
"""

from __future__ import annotations

import ast
import re
from typing import Iterator, Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.scope import Scope

_EINOPS = frozenset({"rearrange", "repeat"})
_EXPAND = frozenset({"expand_as", "expand", "broadcast_to"})
_RANK_TESTS = frozenset({"ndim", "dim", "shape", "size", "len"})


def _candidates(scope: Scope, kind: str) -> list:
    key = f"{kind}:{id(scope.func.node)}"  # type: ignore[union-attr]
    found = scope.memo.get(key)
    if found is None:
        found = scope.memo[key] = []
    return found  # type: ignore[return-value]


def _root_name(node: ast.expr) -> Optional[str]:
    """``mask`` of ``mask``, ``mask.unsqueeze(1)``, ``rearrange(mask, ...)``, ``mask.to(x).unsqueeze(1)``."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            node = node.args[0]
        else:
            return None


# ---- SC153: one name reshaped twice ------------------------------------------------------------------------------
def _einops_ranks(pattern: ast.expr) -> Optional[tuple[int, int]]:
    """(axes read, axes made) of an einops pattern with no ``...``; None otherwise."""
    if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str)) or "->" not in pattern.value \
            or "..." in pattern.value:
        return None
    left, right = pattern.value.split("->", 1)
    count = lambda side: len(re.findall(r"\([^)]*\)|[^\s()]+", side))  # noqa: E731  (a group is one axis)
    return count(left), count(right)


@on(ev.NamedCall)
def note_reshape(scope: Scope, e: ev.NamedCall) -> None:
    """``mask = rearrange(mask, 'b j -> b 1 1 j')``, ``mask = mask.unsqueeze(1).unsqueeze(2)``: a reshape stored back
    under the name it reads."""
    call = e.call
    if scope.func is None or scope.following or len(scope.targets) != 1:
        return
    einops = e.name in _EINOPS and isinstance(call.func, ast.Name) and scope.einops_names.get(e.name) == e.name
    if not (einops or e.name == "unsqueeze" and isinstance(call.func, ast.Attribute)):
        return
    if _root_name(call) == scope.targets[0]:
        _candidates(scope, "reshaped").append((scope.targets[0], call))


def _parents(func: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(func) for child in ast.iter_child_nodes(node)}


def _statement(node: ast.AST, parents: dict[int, ast.AST]) -> Optional[ast.stmt]:
    while node is not None and not isinstance(node, ast.stmt):
        node = parents.get(id(node))  # type: ignore[assignment]
    return node  # type: ignore[return-value]


def _ancestors(node: ast.AST, parents: dict[int, ast.AST]) -> list[ast.AST]:
    found = []
    while id(node) in parents:
        child, node = node, parents[id(node)]
        found.append((node, child))
    return found  # type: ignore[return-value]


def _exclusive(a: ast.stmt, b: ast.stmt, parents: dict[int, ast.AST]) -> bool:
    """Whether the two statements lie in different branches of one ``if`` (or ``try``), so never run together."""
    side_of_a = {id(node): _branch(node, child) for node, child in _ancestors(a, parents)}
    for node, child in _ancestors(b, parents):
        if id(node) in side_of_a:
            return side_of_a[id(node)] != _branch(node, child)
    return False


def _branch(node: ast.AST, child: ast.AST) -> str:
    for field in ("body", "orelse", "handlers", "finalbody"):
        if child in getattr(node, field, ()):
            return field
    return "test"


def _guards(stmt: ast.stmt, other: ast.stmt, parents: dict[int, ast.AST]) -> list[ast.expr]:
    """The tests of the ``if``/``while`` statements around ``stmt`` that are not around ``other`` too."""
    shared = {id(node) for node, _ in _ancestors(other, parents)}
    return [node.test for node, _ in _ancestors(stmt, parents)
            if isinstance(node, (ast.If, ast.While)) and id(node) not in shared]


def _only_presence(test: ast.expr, name: str) -> bool:
    """``exists(mask)``, ``mask is not None``, ``mask``: a test of whether the value is there, nothing else."""
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute):
            return False
        if isinstance(node, ast.Name) and node.id != name and not any(
                isinstance(p, ast.Call) and p.func is node for p in ast.walk(test)):
            return False
    return True


def _tests_rank(test: ast.expr, name: str) -> bool:
    """A test that reads the value's rank or shape (``mask.ndim == 2``, ``len(mask.shape)``, ``mask.dim()``)."""
    words = nm.identifiers(test)
    return name in words and bool(_RANK_TESTS & set(words))


def _stored_between(func: ast.AST, name: str, first: ast.stmt, second: ast.stmt) -> bool:
    end = first.end_lineno or first.lineno
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) and end < n.lineno
               < second.lineno for n in ast.walk(func))


def _reads(first: ast.Call, second: ast.Call, first_stmt: ast.stmt, second_stmt: ast.stmt) -> Optional[str]:
    """What the second reshape reads wrong, when it repeats the first or expects the rank the first one changed."""
    if isinstance(first.func, ast.Name) and isinstance(second.func, ast.Name):
        ranks = [_einops_ranks(nm.argument(c, 1, "pattern") or ast.Constant(None)) for c in (first, second)]
        if None not in ranks and ranks[0][0] == ranks[1][0] != ranks[0][1]:  # type: ignore[index]
            return f"a rank-{ranks[0][1]} tensor as {ranks[1][0]} axes (einops raises)"  # type: ignore[index]
        return None
    value = second_stmt.value  # type: ignore[attr-defined]
    if ast.dump(first_stmt.value) == ast.dump(value) and not _one_step(value):  # type: ignore[attr-defined]
        return "the reshaped value and adds the same axes a second time"
    return None


def _one_step(value: ast.expr) -> bool:
    """``m = m.unsqueeze(0)``: one call on the name itself, how code grows a rank one axis at a time (a 2-D mask
    made 4-D by two of them is meant); a chain (``m.bool().unsqueeze(1).unsqueeze(2)``) re-applied is not."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name)


def _reshaped_twice(scope: Scope) -> None:
    found = scope.memo.get(f"reshaped:{id(scope.func.node)}")  # type: ignore[union-attr]
    lines: dict[str, set[int]] = {}
    for name, call in found or ():  # type: ignore[union-attr]
        lines.setdefault(name, set()).add(call.lineno)
    twice = {name for name, at in lines.items() if len(at) >= 2}
    if not twice:
        return  # no name reshaped on two lines: nothing to read (the common case costs no walk)
    calls = [call for name, call in found if name in twice]  # type: ignore[union-attr]
    func = scope.func.node  # type: ignore[union-attr]
    parents = _parents(func)
    outermost = {}
    for call in calls:  # type: ignore[union-attr]
        stmt = _statement(call, parents)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and (id(stmt) not in outermost or call.col_offset < outermost[id(stmt)][1].col_offset):
            outermost[id(stmt)] = (stmt, call)
    ordered = sorted(outermost.values(), key=lambda pair: pair[0].lineno)
    for i, (second_stmt, second) in enumerate(ordered):
        name = second_stmt.targets[0].id
        for first_stmt, first in reversed(ordered[:i]):
            if first_stmt.targets[0].id != name:
                continue
            shown = _reads(first, second, first_stmt, second_stmt)
            if shown is not None and not _exclusive(first_stmt, second_stmt, parents) \
                    and not _stored_between(func, name, first_stmt, second_stmt) \
                    and all(_only_presence(t, name) for t in _guards(first_stmt, second_stmt, parents)) \
                    and not any(_tests_rank(t, name) for t in _guards(second_stmt, first_stmt, parents)):
                scope.report(msg.ReshapedTwice, second_stmt, name, ast.unparse(second_stmt.value),
                             second_stmt.lineno, first_stmt.lineno, shown)
            break  # only the closest earlier reshape of the name reaches this one


@on(ev.FunctionDone)
def reshaped_twice(scope: Scope, e: ev.FunctionDone) -> None:
    if scope.func is None or scope.following or scope.memo.get(f"reshaped_done:{id(e.node)}"):
        return
    scope.memo[f"reshaped_done:{id(e.node)}"] = True
    _reshaped_twice(scope)
    _keys_expanded(scope)


# ---- SC154: keys or values expanded to the queries' shape ----------------------------------------------------------
def _shape_of(node: ast.expr) -> Optional[str]:
    """``q`` of ``q.shape``, ``q.size()``, ``*q.shape``."""
    if isinstance(node, ast.Starred):
        node = node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size" \
            and not node.args:
        node = node.func
    if isinstance(node, ast.Attribute) and node.attr in ("shape", "size") and isinstance(node.value, ast.Name):
        return node.value.id
    return None


@on(ev.NamedCall)
def note_expansion(scope: Scope, e: ev.NamedCall) -> None:
    """``k = rearrange(k, 'b ... -> b 1 ...').expand_as(q)``, ``k.expand(*q.shape)``,
    ``torch.broadcast_to(k, q.shape)``: a name stored back expanded to another tensor's whole shape."""
    call = e.call
    if e.name not in _EXPAND or scope.func is None or scope.following or len(scope.targets) != 1:
        return
    if nm.is_namespace(call.func.value) if isinstance(call.func, ast.Attribute) else True:
        receiver, given = (call.args[0] if call.args else None), call.args[1:]
    else:
        receiver, given = call.func.value, call.args  # type: ignore[union-attr]
    if receiver is None or len(given) != 1 or _root_name(receiver) != scope.targets[0]:
        return
    other = given[0].id if e.name == "expand_as" and isinstance(given[0], ast.Name) else _shape_of(given[0])
    if other is not None and other != scope.targets[0]:
        _candidates(scope, "expanded").append((scope.targets[0], other, call))


def _attended(func: ast.AST) -> Iterator[tuple[str, str, str]]:
    """(query, key or value, role) of each attention the function computes: a fused call's first three arguments,
    ``q @ k.transpose(-2, -1)``, ``matmul(q, k.transpose(...))``, an einsum contracting the last axis of both."""
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            callee = (nm.dotted(node.func) or getattr(node.func, "attr", "") or "").split(".")[-1]
            if callee in nm.FUSED_ATTENTION and len(node.args) >= 3 and isinstance(node.args[0], ast.Name):
                for arg, role in zip(node.args[1:3], ("keys", "values")):
                    if isinstance(arg, ast.Name):
                        yield node.args[0].id, arg.id, role
            elif callee == "matmul" and len(node.args) == 2:
                yield from _scores(node.args[0], node.args[1])
            elif callee == "einsum" and len(node.args) == 3 and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, str) and all(isinstance(a, ast.Name) for a in node.args[1:]):
                sides = node.args[0].value.replace(" ", "").split("->")[0].split(",")
                if len(sides) == 2 and sides[0][-1:] == sides[1][-1:] and sides[0][-1:] not in \
                        node.args[0].value.split("->")[-1]:
                    yield node.args[1].id, node.args[2].id, "keys"  # type: ignore[union-attr]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            yield from _scores(node.left, node.right)


def _scores(left: ast.expr, right: ast.expr) -> Iterator[tuple[str, str, str]]:
    """``q @ k.transpose(-2, -1)`` (or ``k.mT``, ``k.transpose(2, 3)``): the query and the key."""
    key = right.func.value if isinstance(right, ast.Call) and isinstance(right.func, ast.Attribute) \
        and right.func.attr in ("transpose", "swapaxes") else right.value if isinstance(right, ast.Attribute) \
        and right.attr == "mT" else None
    if isinstance(left, ast.Name) and isinstance(key, ast.Name):
        yield left.id, key.id, "keys"


def _keys_expanded(scope: Scope) -> None:
    found = scope.memo.get(f"expanded:{id(scope.func.node)}")  # type: ignore[union-attr]
    if not found:
        return
    uses = set(_attended(scope.func.node))  # type: ignore[union-attr]
    for name, query, call in found:  # type: ignore[union-attr]
        role = next((r for q, k, r in sorted(uses) if q == query and k == name), None)
        if role is not None:
            scope.report(msg.KeysExpandedToQueries, call, name, role, ast.unparse(call), query)
