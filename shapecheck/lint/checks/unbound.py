"""A local name read where it may not be bound (SC183): no path into the read assigns it (a name copied from the
other branch: ``o = kernel(q1, k1)`` where only the split branch makes ``q1``), or an ``if``/``else`` beside the read
assigns it on one branch and falls through the other (``if n == 0: kv = n_heads else: assert ...``, then ``kv``
read). Either raises UnboundLocalError on that path; pyflakes, which reads no paths, says nothing.

The analysis walks the function's statements once, in order, with the names bound on every path (must) and on some
path (may); what a loop's body binds anywhere may be bound by an earlier iteration. The names bound after a loop or a
``try`` only on some path are never reported, as the loop may always run and the ``try`` may not fail in practice.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass, field
from typing import Iterator, Optional, Union

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint.checks import on
from shapecheck.lint import names as nm
from shapecheck.lint.nodes import ENDS, children, of_type, statement_blocks
from shapecheck.lint.scope import Scope

Func = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_EXITS = {"exit", "quit", "_exit", "abort", "set_trace", "breakpoint"}  # ``sys.exit(...)``, ``os._exit(...)``:
# the path ends; ``pdb.set_trace()``: a path the author stops in the debugger is not meant to go on


@on(ev.FunctionDone, reports=("SC183",))
def unbound_on_a_path(scope: Scope, e: ev.FunctionDone) -> None:
    func = scope.func
    if func is None or func.node is not e.node or scope.following or not isinstance(e.node, _FUNCS):
        return
    node: Func = e.node  # type: ignore[assignment]
    if not any(of_type(node, kind) for kind in _PATHS):
        return  # one path, in order: a name read before it is bound there is pyflakes' undefined name
    if any(isinstance(c.func, ast.Name) and c.func.id in ("exec", "locals", "vars") for c in of_type(node, ast.Call)):
        return  # bindings lint cannot follow
    found = _Bindings(walrus=bool(of_type(node, ast.NamedExpr)))
    outer = {name for kind in (ast.Global, ast.Nonlocal) for n in of_type(node, kind) for name in n.names}
    local = frozenset(set().union(*(found.of(stmt) for stmt in node.body)) - outer - func.params)
    risky = _risky(node, local, found.binds)
    if not risky:
        return
    walk = _Walk(risky, found.binds, _lines_reading(node, risky), found.walrus, _defaults(node, found.binds))
    walk.block(node.body, _State(must=frozenset(), may=frozenset()))  # the parameters are bound: none is followed
    explained = scope.memo.get("unbound_explained", set())  # reads a more specific finding has named (SC108)
    for read, why in walk.found:
        if (read.id, read.lineno) in explained:
            continue
        if why == "never":
            scope.report(msg.UnboundOnPath, read, read.id, "no path to this line assigns it")
        elif int(why) in walk.skipped:
            scope.report(msg.UnboundOnPath, read, read.id, f"the if on line {why} assigns it, and a call that leaves "
                         f"{walk.skipped[int(why)]} skips that if")
        else:
            scope.report(msg.UnboundOnPath, read, read.id, f"the if on line {why} assigns it on one branch only")


_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_PATHS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, *(
    [getattr(ast, "TryStar")] if hasattr(ast, "TryStar") else []), *([ast.Match] if hasattr(ast, "Match") else []))
# statements that make more than one path through a function (or skip part of one)


@dataclass(frozen=True)
class _State:
    must: frozenset[str]
    may: frozenset[str]
    gaps: tuple[tuple[str, int, int, str], ...] = ()  # (name, line of the if, id of the statement list that holds
    # it, the if's condition)
    exits: bool = False


@dataclass
class _Walk:
    local: frozenset[str]  # the names worth following (``_risky``)
    binds: dict[int, frozenset[str]]  # id(statement) -> every name it binds, nested statements included
    lines: list[int]  # sorted: the lines that read one of them
    walrus: bool = False  # the function has a ``:=`` somewhere
    defaults: dict[str, object] = field(default_factory=dict)  # parameters the function never rebinds -> their
    # constant defaults (``mask=None``, ``window=0``): the value an ``if`` on them sees when the caller leaves them out
    found: list[tuple[ast.Name, str]] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)  # line of an ``if`` with no ``else`` that the defaults
    # skip -> the parameters it reads, shown with their defaults
    _seen: set[int] = field(default_factory=set)
    _elifs: set[int] = field(default_factory=set)

    def block(self, body: list[ast.stmt], state: _State) -> _State:
        for stmt in body:
            if state.exits:
                return state
            state = self.statement(stmt, state, id(body))
        return state

    def statement(self, stmt: ast.stmt, state: _State, level: int) -> _State:
        if isinstance(stmt, ast.If):
            self.reads(stmt.test, state, level)
            state = self.bind(state, _walrus(stmt.test) if self.walrus else set())
            if isinstance(stmt.test, ast.Constant):  # ``if False:  # config.q_int8``: one branch never runs
                return self.block(stmt.body if stmt.test.value else stmt.orelse, state)
            chained = len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If)  # ``elif``: one chain, one level
            if chained:
                self._elifs.add(id(stmt.orelse[0]))
            other = self.statement(stmt.orelse[0], state, level) if chained else self.block(stmt.orelse, state)
            return self.branches(stmt, [self.block(stmt.body, state), other], state, level)
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            return self.loop(stmt, state, level)
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            return self.attempt(stmt, state)  # type: ignore[arg-type]
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.reads(item.context_expr, state, level)
                made = _walrus(item.context_expr) if self.walrus else set()
                state = self.bind(state, _targets(item.optional_vars) | made)
            return self.block(stmt.body, state)
        if type(stmt).__name__ == "Match":
            return _State(state.must, state.may | self.followed(stmt), ())  # not followed: nothing reported after
        if not isinstance(stmt, ast.Raise):  # a path that raises fails either way: what its message reads is moot
            self.reads(stmt, state, level)
        if isinstance(stmt, ENDS) or _ends(stmt):
            return _State(state.must, state.may, state.gaps, exits=True)
        if isinstance(stmt, ast.Delete):
            gone = {n for t in stmt.targets for n in _targets(t)}
            return _State(state.must - gone, state.may, state.gaps)
        return self.bind(state, self.followed(stmt))

    def branches(self, stmt: ast.If, outs: list[_State], before: _State, level: int) -> _State:
        live = [s for s in outs if not s.exits]
        if not live:
            return _State(before.must, before.may, before.gaps, exits=True)
        must = frozenset.intersection(*(s.must for s in live))
        may = frozenset.union(*(s.may for s in live))
        carried = [g for s in live for g in s.gaps if g[0] not in must]
        if outs[0].exits and _value(stmt.test, self.defaults) is True:
            carried = [g for g in carried if g[1] not in self.skipped]  # the defaults leave here (``if right and
            # not left: return``): a gap only the defaults open is not on a path past this ``if``
        explicit = bool(stmt.orelse) and not (len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If))
        lacking: frozenset[str] = frozenset()
        skipped = not stmt.orelse and id(stmt) not in self._elifs and _false_by_default(stmt.test, self.defaults)
        # (an ``elif`` is reached only when the tests above it fail, whatever the defaults)
        if len(live) == 2 and (explicit or skipped):
            # an ``else`` written out that binds on no path what the other branch always binds, or an ``if`` that a
            # call leaving a parameter at its default skips (``if mask is not None:`` with ``mask=None``); another
            # ``if`` or ``elif`` chain with no ``else`` is often exhaustive by design, and is left alone
            one, other = live
            lacking = ((one.must - other.may) | (other.must - one.may)) - before.may
        if not carried and not lacking:
            return _State(must, may)
        again, test = self.followed(stmt), _condition(stmt.test)
        gaps = tuple(dict.fromkeys(g for g in carried if not (
            g in before.gaps and (g[0] in again or g[3] == test))))  # a later ``if`` that binds the name on some
        # path, or tests what the first one tested, handles the gap: the conditions go together
        if lacking and not _tests_a_name(stmt, self.binds[id(stmt)]):
            gaps += tuple((n, stmt.lineno, level, test) for n in sorted(lacking))
            if skipped:
                read = sorted({n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name) and n.id in self.defaults})
                self.skipped[stmt.lineno] = " and ".join(f"{n}={self.defaults[n]!r} (its default)" for n in read)
        return _State(must, may, gaps)

    def loop(self, stmt: Union[ast.For, ast.AsyncFor, ast.While], state: _State, level: int) -> _State:
        head = stmt.iter if isinstance(stmt, (ast.For, ast.AsyncFor)) else stmt.test
        self.reads(head, state, level)
        state = self.bind(state, _walrus(head) if self.walrus else set())
        target = _targets(stmt.target) if isinstance(stmt, (ast.For, ast.AsyncFor)) else set()
        inside = self.bind(_State(state.must, state.may), target)
        bound = self.followed(stmt)
        self.block(stmt.body, _State(inside.must, inside.may | bound))  # one pass: what the body binds anywhere
        # may be bound by an earlier iteration
        after = self.block(stmt.orelse, _State(state.must, state.may | bound))
        forever = isinstance(stmt, ast.While) and isinstance(stmt.test, ast.Constant) and bool(stmt.test.value) \
            and not any(isinstance(n, ast.Break) for n in _loop_own(stmt.body))
        return _State(state.must, state.may | after.may | bound, exits=forever)  # ``while True`` left only by
        # ``return`` or ``raise``

    def attempt(self, stmt: ast.Try, state: _State) -> _State:
        body = self.block(stmt.body, _State(state.must, state.may))
        may = state.may | self.followed(stmt)
        handled = [self.block(h.body, self.bind(_State(state.must, may), {h.name} if h.name else set()))
                   for h in stmt.handlers]
        done = self.block(stmt.orelse, body)
        self.block(stmt.finalbody, _State(state.must, may))
        live = [s for s in [done, *handled] if not s.exits]
        if not live:
            return _State(state.must, may, (), exits=True)
        return _State(frozenset.intersection(*(s.must for s in live)) | state.must, may)  # the body may fail
        # anywhere, but a handler that binds what the body binds leaves it bound either way

    def followed(self, stmt: ast.stmt) -> frozenset[str]:
        """What the statement binds of the names followed: the states hold only those (no other name is ever
        looked up in them)."""
        return self.binds[id(stmt)] & self.local

    def bind(self, state: _State, names: Union[set[str], frozenset[str]]) -> _State:
        names = names & self.local
        if not names:
            return state
        return _State(state.must | names, state.may | names, tuple(g for g in state.gaps if g[0] not in names))

    def reads(self, node: ast.AST, state: _State, level: int) -> None:
        start, end = getattr(node, "lineno", 0), getattr(node, "end_lineno", None) or getattr(node, "lineno", 0)
        k = bisect.bisect_left(self.lines, start)
        if k == len(self.lines) or self.lines[k] > end:
            return  # reads none of the names followed
        walrus = _walrus(node) if self.walrus else set()  # ``(key := ...) in d and d[key]``: bound where read
        for name, conditional in _loads(node):
            if name.id in walrus or conditional:  # ``x if flag else y``, ``a or b``: a read under a condition of
                continue  # its own, often one the code above has already settled (a dead ``else``)
            if name.id not in self.local or name.id in state.must or id(name) in self._seen:
                continue
            if name.id not in state.may:
                self._seen.add(id(name))
                self.found.append((name, "never"))
                continue
            gap = next((g for g in state.gaps if g[0] == name.id and g[2] == level), None)
            if gap is not None:
                self._seen.add(id(name))
                self.found.append((name, str(gap[1])))


def _defaults(node: Func, binds: dict[int, frozenset[str]]) -> dict[str, object]:
    """The parameters with a constant default (``None``, ``False``, a number, a string) that no statement of the
    function rebinds, each with that default."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    rebound = frozenset().union(*(binds.get(id(stmt), frozenset()) for stmt in node.body))
    return {a.arg: d.value for a, d in pairs if isinstance(d, ast.Constant) and a.arg not in rebound}


_UNKNOWN = object()


def _false_by_default(test: ast.expr, defaults: dict[str, object]) -> bool:
    """Whether the test is false when the parameters it reads hold their defaults: ``mask is not None``, ``mask``,
    ``window > 0``, ``not use_cache``, joined by ``and``/``or``. Anything else it reads makes it unknown."""
    return _value(test, defaults) is False


def _value(node: ast.expr, defaults: dict[str, object]) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return defaults.get(node.id, _UNKNOWN)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _value(node.operand, defaults)
        return _UNKNOWN if inner is _UNKNOWN else not inner
    if isinstance(node, ast.BoolOp):
        values = [_value(v, defaults) for v in node.values]
        known = [bool(v) for v in values if v is not _UNKNOWN]
        if isinstance(node.op, ast.And):
            return False if False in known else (True if len(known) == len(values) else _UNKNOWN)
        return True if True in known else (False if len(known) == len(values) else _UNKNOWN)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _value(node.left, defaults), _value(node.comparators[0], defaults)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        return _compare(node.ops[0], left, right)
    return _UNKNOWN


def _compare(op: ast.cmpop, left: object, right: object) -> object:
    try:
        if isinstance(op, (ast.Is, ast.IsNot)):
            return (left is right) == isinstance(op, ast.Is)
        if isinstance(op, (ast.Eq, ast.NotEq)):
            return (left == right) == isinstance(op, ast.Eq)
        ordered = {ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b, ast.Lt: lambda a, b: a < b,
                   ast.LtE: lambda a, b: a <= b}.get(type(op))
        return bool(ordered(left, right)) if ordered else _UNKNOWN
    except TypeError:  # ``None > 0``: raises at run time; not a path this rule reasons about
        return _UNKNOWN


def _loop_own(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of a loop body outside nested loops and scopes: where a ``break`` leaves this loop."""
    stack: list[ast.AST] = list(body)
    while stack:
        here = stack.pop()
        yield here
        if not isinstance(here, (ast.For, ast.AsyncFor, ast.While, *_SCOPES)):
            stack.extend(ast.iter_child_nodes(here))
        elif isinstance(here, (ast.For, ast.AsyncFor, ast.While)):
            stack.extend(here.orelse)


def _loads(node: ast.AST) -> Iterator[tuple[ast.Name, bool]]:
    """Names the statement or expression reads now, each with whether it is read under a condition of its own
    (the branches of ``a if c else b``, the operands after the first of ``and``/``or``, a comprehension's body): not
    inside a nested function, lambda or class (read later, or in their own scope), nor a comprehension's own
    variables."""
    stack: list[tuple[ast.AST, frozenset[str], bool]] = [(node, frozenset(), False)]
    while stack:
        here, own, cond = stack.pop()
        if isinstance(here, ast.Name) and isinstance(here.ctx, ast.Load) and here.id not in own:
            yield here, cond
            continue
        if isinstance(here, _COMPREHENSIONS):
            inner = own | {n for gen in here.generators for n in _targets(gen.target)}
            for k, gen in enumerate(here.generators):
                stack.append((gen.iter, own if k == 0 else inner, cond or k > 0))  # the first iterable is read
                stack.extend((c, inner, True) for c in gen.ifs)  # outside, once
            stack.extend((part, inner, True) for part in ast.iter_child_nodes(here)
                         if not isinstance(part, ast.comprehension))
            continue
        if isinstance(here, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend((d, own, cond) for d in here.decorator_list)  # the body runs later
            if not isinstance(here, ast.ClassDef):
                stack.extend((d, own, cond) for d in here.args.defaults + [d for d in here.args.kw_defaults if d])
            continue
        if isinstance(here, ast.Lambda):
            stack.extend((d, own, cond) for d in here.args.defaults + [d for d in here.args.kw_defaults if d])
            continue
        if isinstance(here, ast.IfExp):
            stack.extend([(here.test, own, cond), (here.body, own, True), (here.orelse, own, True)])
            continue
        if isinstance(here, ast.BoolOp):
            stack.extend((v, own, cond or k > 0) for k, v in enumerate(here.values))
            continue
        stack.extend((child, own, cond) for child in ast.iter_child_nodes(here))


def _walrus(node: ast.AST) -> set[str]:
    """Names bound with ``:=`` in a statement or expression, outside nested functions, lambdas and classes (whose
    own names those are)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        here = stack.pop()
        if isinstance(here, ast.NamedExpr) and isinstance(here.target, ast.Name):
            found.add(here.target.id)
        if here is node or not isinstance(here, _SCOPES):
            stack.extend(children(here))
    return found


def _targets(node: Optional[ast.AST]) -> set[str]:
    """The names a target binds: ``x``, ``a, (b, *c)``; an attribute or an item (``self.x``, ``d[k]``) binds none."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, (ast.Tuple, ast.List)):
        return set().union(*(_targets(e) for e in node.elts))
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return set()


@dataclass
class _Bindings:
    """What each statement of a function binds, nested statements included (not nested functions' or classes'
    bodies, not a comprehension's own variables), read from statements and their targets only: an expression binds
    nothing but by ``:=``, looked for only in a function that has one."""

    walrus: bool = False
    binds: dict[int, frozenset[str]] = field(default_factory=dict)

    def of(self, stmt: ast.stmt) -> frozenset[str]:
        names: set[str] = set()
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)  # its body binds its own names
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
        elif isinstance(stmt, _SIMPLE) and not self.walrus:  # ``x = ...``, a call, a return: its targets only
            names = _targets(stmt.targets[0]) if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
                else set().union(*(_targets(t) for t in _heads(stmt)))
        else:
            for target in _heads(stmt):
                names |= _targets(target)
            names |= {h.name for h in getattr(stmt, "handlers", ()) if h.name}
            for block in statement_blocks(stmt):
                for inner in block:
                    names |= self.of(inner)
            if self.walrus:
                names |= _walrus(stmt)
            for case in getattr(stmt, "cases", ()):  # ``case Point(x=px) | [px, *rest]``: the names a pattern binds
                names |= {n for p in ast.walk(case.pattern)
                          for n in (getattr(p, "name", None), getattr(p, "rest", None)) if isinstance(n, str)}
        found = self.binds[id(stmt)] = frozenset(names)
        return found


def _heads(stmt: ast.stmt) -> list[ast.AST]:
    """The targets a statement itself binds: an assignment's, a loop's, a ``with``'s ``as`` names."""
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        return [stmt.target]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [item.optional_vars for item in stmt.items if item.optional_vars is not None]
    return []


def _risky(node: Func, local: frozenset[str], binds: dict[int, frozenset[str]]) -> frozenset[str]:
    """The local names some read may find unbound: one that an ``if`` of the function binds on one branch only, or
    one read on a line before its first binding. A name every path binds before any line reads it is bound at every
    read."""
    partial: set[str] = set()
    for branch in of_type(node, ast.If):  # only an ``if`` makes a path on which a read finds a name unbound: after
        if id(branch) in binds:  # a loop or a ``try`` what they bind is taken as bound (not reported)
            partial |= binds[id(branch)] - _must(branch, binds)  # type: ignore[arg-type]
    first: dict[str, int] = {}
    sites = [(n.id, n.lineno) for n in of_type(node, ast.Name) if not isinstance(n.ctx, ast.Load)]
    sites += [((a.asname or a.name).split(".")[0], i.lineno) for kind in (ast.Import, ast.ImportFrom)
              for i in of_type(node, kind) for a in i.names]  # type: ignore[attr-defined]
    sites += [(d.name, d.lineno) for kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
              for d in of_type(node, kind) if d is not node]  # type: ignore[attr-defined]
    for name, line in sites:
        if name in local:
            first[name] = min(first.get(name, line), line)
    loads = [n for n in of_type(node, ast.Name) if isinstance(n.ctx, ast.Load) and n.id in local]
    early = {n.id for n in loads if n.lineno <= first.get(n.id, 0)}
    risky = (partial & local) | early
    if not risky:
        return frozenset()
    settled = _bound_up_front(node, risky, binds)
    if settled:  # a name bound by a statement of the function's own body before every line that reads it
        for n in loads:
            if n.id in settled and n.lineno <= settled[n.id]:
                del settled[n.id]
    return frozenset(risky - settled.keys())


def _bound_up_front(node: Func, names: set[str], binds: dict[int, frozenset[str]]) -> dict[str, int]:
    """The names that a statement of the function's own body (not one inside an ``if``, a loop or a ``try``)
    binds, each with the last line of the first such statement: every line after it runs after it. A name the
    function ever deletes is left out."""
    found: dict[str, int] = {}
    for stmt in node.body:
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Import, ast.ImportFrom)):
            for name in binds[id(stmt)] & names:
                found.setdefault(name, stmt.end_lineno or stmt.lineno)
    for gone in of_type(node, ast.Delete):
        for target in gone.targets:  # type: ignore[attr-defined]
            for name in _targets(target):
                found.pop(name, None)
    return found


def _must(stmt: ast.stmt, binds: dict[int, frozenset[str]]) -> frozenset[str]:
    """What a statement binds on every path through it (leaving out the paths that return or raise would only
    add names: this errs towards following more)."""
    if isinstance(stmt, ast.If):
        return _must_block(stmt.body, binds) & _must_block(stmt.orelse, binds)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return frozenset(n for item in stmt.items for n in _targets(item.optional_vars)) | _must_block(stmt.body, binds)
    if isinstance(stmt, _SIMPLE):
        return binds[id(stmt)]
    return frozenset()  # a loop may not run, a ``try`` may fail anywhere, a ``match`` may match no case


def _must_block(body: list[ast.stmt], binds: dict[int, frozenset[str]]) -> frozenset[str]:
    return frozenset().union(*(_must(stmt, binds) for stmt in body))


_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Import, ast.ImportFrom, ast.Return, ast.Pass,
           ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assert, ast.Delete, ast.Raise, ast.Global,
           ast.Nonlocal, ast.Continue, ast.Break)  # statements that hold no statements


def _lines_reading(node: Func, names: frozenset[str]) -> list[int]:
    return sorted({n.lineno for n in of_type(node, ast.Name) if isinstance(n.ctx, ast.Load) and n.id in names})


def _ends(stmt: ast.stmt) -> bool:
    """``assert False``, ``sys.exit(...)``: the path stops here (or was written to)."""
    if isinstance(stmt, ast.Assert):  # ``assert NotImplementedError(...)``: always true, but written to stop there
        raised = stmt.test.func if isinstance(stmt.test, ast.Call) else stmt.test
        return isinstance(stmt.test, ast.Constant) and not stmt.test.value or _last_name(raised).endswith(
            ("Error", "Exception"))
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _last_name(stmt.value.func) in _EXITS


def _last_name(node: ast.expr) -> str:
    return (nm.dotted(node) or "").split(".")[-1]


def _condition(test: ast.expr) -> str:
    """What an ``if`` tests, with a ``not`` in front taken off: ``if return_loss:`` and ``if not return_loss:`` ask
    one question."""
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return ast.dump(test)


def _tests_a_name(stmt: ast.If, bound: frozenset[str]) -> bool:
    """``if x is None: x = ...``-style tests of the very name a branch binds are left to the reader."""
    return any(isinstance(n, ast.Name) and n.id in bound for n in ast.walk(stmt.test))
