"""Calls between the classes of one file: which class's ``forward`` a call reaches, and so what each caller passes
for a ``forward`` parameter.

``self.attn(x, mask=m)`` reaches the class ``self.attn`` was built from in the caller's class; a name bound by a
loop over a container attribute (``for attn, ff in self.layers``) reaches, position by position, what the
container's items were built from (``self.layers.append(nn.ModuleList([Attention(...), FeedForward(...)]))``).
A built expression may hold several of the file's classes (``PreNorm(dim, Attention(...))``): the call reaches
the one whose ``forward`` takes the argument by name, when exactly one does. Anything else reaches nothing known,
and a parameter with such a caller has no known callers at all.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from typing import Optional, Union

from shapecheck.lint import names as nm
from shapecheck.lint.nodes import of_type, subtree, walk
from shapecheck.lint.scope import Scope

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]


@dataclass(frozen=True)
class Caller:
    """One call that reaches a class's ``forward`` and gives a parameter a value."""

    call: ast.Call
    value: ast.expr  # what the call passes for the parameter
    method: Function  # the calling method
    owner: ast.ClassDef  # its class


def callers(scope: Scope, class_name: str, param: str) -> Optional[list[Caller]]:
    """Every call of the file that gives ``param`` of ``class_name.forward`` a value; None when some call that
    may reach that class cannot be resolved (then what callers pass is not known), [] when none passes it."""
    table = _table(scope)
    if class_name not in table.forwards:
        return None
    if param in table.unresolved.get(class_name, set()):
        return None
    return table.passed.get((class_name, param), [])


@dataclass
class _Table:
    forwards: dict[str, Function]
    passed: dict[tuple[str, str], list[Caller]]
    unresolved: dict[str, set[str]]  # class -> parameters some call passes to something that may be it
    takes: dict[str, frozenset[str]] = field(default_factory=dict)  # class -> what its forward takes by name
    taking: dict[str, list[str]] = field(default_factory=dict)  # parameter name -> the classes that take it
    built_in: dict[ast.expr, list[str]] = field(default_factory=dict)  # expression -> the file's classes it builds


def _table(scope: Scope) -> _Table:
    if "file_calls" not in scope.memo:
        scope.memo["file_calls"] = _build(scope.tree)
    return scope.memo["file_calls"]  # type: ignore[return-value]


def _build(tree: ast.Module) -> _Table:
    classes = [c for c in walk(tree) if isinstance(c, ast.ClassDef)]
    forwards: dict[str, Function] = {}
    for cls in classes:
        for item in cls.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "forward":
                forwards.setdefault(cls.name, item)
    table = _Table(forwards, {}, {})
    if not forwards:
        return table
    for name, forward in forwards.items():
        table.takes[name] = frozenset(a.arg for a in (*forward.args.args[1:], *forward.args.kwonlyargs))
        for param in table.takes[name]:
            table.taking.setdefault(param, []).append(name)
    seen: set[int] = set()
    known = _known_names(tree)
    for cls in classes:
        built = _built(cls)
        own = known | _method_names(cls)
        for method in cls.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                loops = _loop_items(method, built)
                for call in of_type(method, ast.Call):
                    if id(call) not in seen:
                        seen.add(id(call))
                        made = _reached_exprs(call, built, loops)
                        if made is not None:
                            _record(table, call, made, method, cls)
                        elif _may_be_module(call, own, built):
                            _unknown(table, call)
    for call in of_type(tree, ast.Call):
        if id(call) not in seen and _may_be_module(call, known, {}):
            _unknown(table, call)
    return table


def _method_names(cls: ast.ClassDef) -> frozenset[str]:
    return frozenset(m.name for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _known_names(tree: ast.Module) -> frozenset[str]:
    """Names that are not modules of this file: the module's functions and classes, imports, builtins."""
    found = set(dir(builtins))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
    for node in walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return frozenset(found)


def _may_be_module(call: ast.Call, known: frozenset[str], built: dict[str, list[ast.expr]]) -> bool:
    """A call of something that may be a module of this file: a local or parameter name, an attribute that is
    not built in this class, an item of a container."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id not in known
    if isinstance(func, ast.Attribute):
        if nm.is_namespace(func.value):
            return False
        attr = nm.self_attr(func)
        return attr is not None and attr not in built and attr not in known or attr is None and func.attr == "forward"
    return isinstance(func, ast.Subscript)


def _unknown(table: _Table, call: ast.Call) -> None:
    """A call that may reach any class of the file: what it passes by name is not known to come from it alone."""
    for kw in call.keywords:
        for name in table.taking.get(kw.arg or "", ()):
            table.unresolved.setdefault(name, set()).add(kw.arg)  # type: ignore[arg-type]


def _record(table: _Table, call: ast.Call, made: list[ast.expr], method: Function, owner: ast.ClassDef) -> None:
    for kw in call.keywords:
        if kw.arg is None:
            continue
        targets = {name for expr in made for name in _classes_taking(table, expr, kw.arg)}
        if len(targets) == 1 and all(_classes_taking(table, e, kw.arg) for e in made):
            table.passed.setdefault((targets.pop(), kw.arg), []).append(Caller(call, kw.value, method, owner))
        else:
            for name in targets:
                table.unresolved.setdefault(name, set()).add(kw.arg)
    if call.args:
        classes = {c for expr in made for c in _file_classes(table, expr)}
        for name in classes:  # positional arguments: only where one class is reached for sure
            params = [a.arg for a in table.forwards[name].args.args[1:]]
            if len(classes) == 1 and len(made) == 1 and not any(isinstance(a, ast.Starred) for a in call.args):
                for param, arg in zip(params, call.args):
                    table.passed.setdefault((name, param), []).append(Caller(call, arg, method, owner))
            else:
                table.unresolved.setdefault(name, set()).update(params)


def _reached_exprs(call: ast.Call, built: dict[str, list[ast.expr]],
                   loops: dict[str, list[ast.expr]]) -> Optional[list[ast.expr]]:
    """What the called object was built from: ``self.attn`` -> its builders; a loop name -> the items' parts."""
    attr = nm.self_attr(call.func)
    if attr is not None:
        return built.get(attr)
    if isinstance(call.func, ast.Name):
        return loops.get(call.func.id)
    return None


def _built(cls: ast.ClassDef) -> dict[str, list[ast.expr]]:
    """``self.attr`` -> what its methods build it from: assignments, and ``append``/``extend`` of items."""
    found: dict[str, list[ast.expr]] = {}
    for node in walk(cls):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            attr = nm.self_attr(node.targets[0])
            if attr is not None:
                found.setdefault(attr, []).append(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("append", "extend") and node.args:
            attr = nm.self_attr(node.func.value)
            if attr is not None:
                item = node.args[0]
                found.setdefault(attr, []).append(_container(item) if node.func.attr == "append" else item)
    return found


def _container(node: ast.expr) -> ast.expr:
    """A list literal of one appended item, read like the containers ``self.attr`` is assigned."""
    return ast.List(elts=[node], ctx=ast.Load())


def _loop_items(method: Function, built: dict[str, list[ast.expr]]) -> dict[str, list[ast.expr]]:
    """Names bound by ``for target in self.attr`` -> what the items (or the target's parts) were built from."""
    found: dict[str, list[ast.expr]] = {}
    for loop in [*of_type(method, ast.For), *of_type(method, ast.AsyncFor)]:
        enumerated = isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) \
            and loop.iter.func.id == "enumerate" and len(loop.iter.args) == 1
        source = loop.iter.args[0] if enumerated else loop.iter  # type: ignore[attr-defined]
        attr = nm.self_attr(source)
        if attr is None or attr not in built:
            continue
        target = loop.target
        if enumerated:
            target = target.elts[1] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else None
        if target is None:
            continue
        items = [item for made in built[attr] for item in _items(made)]
        if isinstance(target, ast.Name):
            found[target.id] = items
        elif isinstance(target, ast.Tuple) and all(isinstance(t, ast.Name) for t in target.elts):
            for i, part in enumerate(target.elts):
                parts = [_part(item, i, len(target.elts)) for item in items]
                if all(p is not None for p in parts):
                    found[part.id] = parts  # type: ignore[union-attr,assignment]
    return found


def _items(made: ast.expr) -> list[ast.expr]:
    """The items of a container built as ``nn.ModuleList([...])``, ``[...]``, ``[X for ...]``, ``Sequential(a, b)``."""
    if isinstance(made, ast.Call) and (nm.dotted(made.func) or "").split(".")[-1] in ("ModuleList", "Sequential"):
        if len(made.args) == 1 and isinstance(made.args[0], (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)):
            return _items(made.args[0])
        return list(made.args)
    if isinstance(made, (ast.List, ast.Tuple)):
        return list(made.elts)
    if isinstance(made, (ast.ListComp, ast.GeneratorExp)):
        return [made.elt]
    return []


def _part(item: ast.expr, index: int, count: int) -> Optional[ast.expr]:
    parts = _items(item)
    return parts[index] if len(parts) == count else None


def _file_classes(table: _Table, expr: ast.expr) -> list[str]:
    """The file's classes built in ``expr`` (found once per expression)."""
    if expr not in table.built_in:  # keyed by the node itself: a list made for an appended item lives as long
        table.built_in[expr] = [c.func.id for c in subtree(expr) if isinstance(c, ast.Call)
                                and isinstance(c.func, ast.Name) and c.func.id in table.forwards]
    return table.built_in[expr]


def _classes_taking(table: _Table, expr: ast.expr, param: str) -> list[str]:
    """The file's classes built in ``expr`` whose ``forward`` takes ``param`` by name."""
    return [name for name in _file_classes(table, expr) if param in table.takes[name]]
