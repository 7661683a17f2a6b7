"""Which assignments of a function are dead: nothing reads the stored value on any path before the name is bound
again or the function ends. A backward liveness pass over the statements, by data flow alone.

Conservative where Python is dynamic: a function that calls ``locals()``, ``vars()``, ``eval`` or ``exec``, or
declares ``global``/``nonlocal`` names, has no dead stores; a name read in a nested function, lambda or class is
read everywhere; a ``try`` body may stop after any statement, so what its handlers and ``finally`` read stays
live through it; ``break`` and ``continue`` keep alive what the loop's exit and its next turn read.
"""

from __future__ import annotations

import ast
from typing import Iterable, Union

from shapecheck.lint.nodes import subtree

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Store = tuple[ast.stmt, str]

_DYNAMIC = frozenset({"locals", "vars", "eval", "exec"})
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def dead_stores(func: Function, nodes: Iterable[ast.AST]) -> list[Store]:
    """Plain, augmented and annotated assignments to names (tuple targets included) whose value nothing reads,
    in source order; ``nodes`` are the function's nodes."""
    captured: set[str] = set()
    for node in nodes:
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _DYNAMIC:
            return []
        if isinstance(node, _NESTED) and node is not func:
            captured |= {n.id for n in subtree(node) if type(n) is ast.Name}  # type: ignore[attr-defined]
    found = _Pass(captured)
    found.block(func.body, frozenset())
    return sorted(found.dead, key=lambda s: (s[0].lineno, s[0].col_offset, s[1]))


def reads(node: ast.AST) -> set[str]:
    """The names an expression (or a statement's expressions) reads."""
    return {n.id for n in subtree(node) if type(n) is ast.Name and not isinstance(n.ctx, ast.Store)}  # type: ignore[attr-defined]


def _names(target: ast.expr) -> list[str]:
    return [n.id for n in subtree(target) if type(n) is ast.Name]  # type: ignore[attr-defined]


def _plain(targets: list[ast.expr]) -> bool:
    """Only names (a tuple of names too): no attribute or item is set, so the value does not escape."""
    return not any(isinstance(n, (ast.Attribute, ast.Subscript)) for t in targets for n in subtree(t))


class _Pass:
    def __init__(self, captured: set[str]) -> None:
        self.captured = captured
        self.dead: set[Store] = set()
        self.record = True
        self.loops: list[tuple[frozenset[str], frozenset[str]]] = []  # (live after the loop, live at its head)

    def block(self, stmts: list[ast.stmt], live: frozenset[str]) -> frozenset[str]:
        for stmt in reversed(stmts):
            live = self.statement(stmt, live)
        return live

    def store(self, stmt: ast.stmt, names: Iterable[str], live: frozenset[str]) -> None:
        if self.record:
            self.dead |= {(stmt, n) for n in names if n not in live and n not in self.captured}

    def statement(self, stmt: ast.stmt, live: frozenset[str]) -> frozenset[str]:  # noqa: C901 (one case a kind)
        if isinstance(stmt, ast.Assign) and _plain(stmt.targets):
            names = [n for t in stmt.targets for n in _names(t)]
            self.store(stmt, names, live)
            return (live - set(names)) | reads(stmt.value)
        if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and isinstance(stmt.target, ast.Name):
            if stmt.value is None:
                return live
            self.store(stmt, [stmt.target.id], live)
            kept = live | {stmt.target.id} if isinstance(stmt, ast.AugAssign) else live - {stmt.target.id}
            return kept | reads(stmt.value)
        if isinstance(stmt, (ast.Return, ast.Raise)):
            return frozenset(reads(stmt))
        if isinstance(stmt, ast.If):
            return self.block(stmt.body, live) | self.block(stmt.orelse, live) | reads(stmt.test)
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            return self.loop(stmt, live)
        if isinstance(stmt, (ast.Break, ast.Continue)):
            return (self.loops[-1][0 if isinstance(stmt, ast.Break) else 1] if self.loops else live)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            bound = {n for item in stmt.items if item.optional_vars is not None for n in _names(item.optional_vars)}
            inner = self.block(stmt.body, live) - bound
            return frozenset(inner.union(*(reads(item.context_expr) for item in stmt.items)))
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            return self.attempt(stmt, live)
        if isinstance(stmt, ast.Match):
            arms = [self.block(case.body, live) | reads(case) for case in stmt.cases]
            return frozenset(live.union(*arms)) | reads(stmt.subject)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return (live - {stmt.name}) | reads(stmt)
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return live - {(a.asname or a.name).split(".")[0] for a in stmt.names}
        return live | reads(stmt)  # expressions, assert, del, pass, assignments that set attributes or items

    def loop(self, stmt: Union[ast.For, ast.AsyncFor, ast.While], after: frozenset[str]) -> frozenset[str]:
        if isinstance(stmt, ast.While):
            head_reads, targets = reads(stmt.test), set()
        else:
            head_reads, targets = reads(stmt.iter), set(_names(stmt.target))
        exit_live = self.block(stmt.orelse, after)
        head = exit_live | head_reads
        recording, self.record = self.record, False
        for _ in range(8):  # to a fixed point: what the body reads before binding it is live at the loop's head
            grown = head | self.body(stmt, after, head, targets)
            if grown == head:
                break
            head = grown
        self.record = recording
        return head | self.body(stmt, after, head, targets)

    def body(self, stmt: ast.stmt, after: frozenset[str], head: frozenset[str], targets: set[str]) -> frozenset[str]:
        self.loops.append((after, head))
        try:
            return self.block(stmt.body, head) - targets  # type: ignore[attr-defined]
        finally:
            self.loops.pop()

    def attempt(self, stmt: ast.stmt, live: frozenset[str]) -> frozenset[str]:
        final = self.block(getattr(stmt, "finalbody", []), live)
        handlers = [self.block(h.body, final) for h in getattr(stmt, "handlers", [])]
        anywhere = frozenset(final.union(*handlers))  # an exception can leave the body after any statement
        inner = self.block(getattr(stmt, "orelse", []), final) | anywhere
        for s in reversed(stmt.body):  # type: ignore[attr-defined]
            inner = self.statement(s, inner | anywhere)
        return inner | anywhere
