"""A setting a module takes and never uses while it builds a module of the same file that takes the same setting
without it (SC156): ``Transformer(..., use_flash_attn=True)`` builds ``Attention(dim, heads=heads)``, so the
attention keeps its default whatever the caller asked for.

Read once per class, when its ``__init__`` is done: the parameters of ``__init__`` that it never reads (or only
stores in ``self.<name>``, which no method of the class reads) and that a class of the file built there takes too, and
uses (a setting the built class ignores as well changes nothing).
"""

from __future__ import annotations

import ast
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.scope import Scope

_DYNAMIC = frozenset({"locals", "vars", "save_hyperparameters", "__dict__", "setattr"})


def _init(node: Optional[ast.ClassDef]) -> Optional[ast.FunctionDef]:
    if node is None:
        return None
    return next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)


def _defaults(init: ast.FunctionDef) -> tuple[list[str], set[str]]:
    """(positional parameters after ``self``, the names of every parameter that has a default)."""
    args = init.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]][1:]
    with_default = {a.arg for a in [*args.posonlyargs, *args.args][len(args.posonlyargs) + len(args.args)
                                                                    - len(args.defaults):]}
    with_default |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
    return positional, with_default


def _unused(init: ast.FunctionDef, owner: ast.ClassDef) -> set[str]:
    """Parameters of ``__init__`` read nowhere but in ``self.<attr> = <param>``, whose attribute no method reads."""
    params = {a.arg for a in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs]} - {"self"}
    stored: dict[str, str] = {}  # param -> attribute it is stored in
    read: set[str] = set()
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and nm.self_attr(node.targets[0]) \
                and isinstance(node.value, ast.Name) and node.value.id in params:
            stored[node.value.id] = nm.self_attr(node.targets[0])  # type: ignore[assignment]
    plain_stores = {id(n.value) for n in ast.walk(init) if isinstance(n, ast.Assign) and len(n.targets) == 1
                    and nm.self_attr(n.targets[0]) and isinstance(n.value, ast.Name)}
    for node in ast.walk(init):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and id(node) not in plain_stores:
            read.add(node.id)
    attributes_read = {node.attr for node in ast.walk(owner) if isinstance(node, ast.Attribute)
                       and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)
                       and node.value.id == "self"}
    return {p for p in params - read if p not in stored or stored[p] not in attributes_read}


@on(ev.NamedCall)
def note_built(scope: Scope, e: ev.NamedCall) -> None:
    """``Attention(dim, heads=heads)`` in ``__init__``: a class of the file built, kept for when the body is done."""
    func = scope.func
    if func is not None and func.node.name == "__init__" and not scope.following and isinstance(e.call.func, ast.Name) \
            and e.name in getattr(scope, "classes", ()):
        scope.memo.setdefault(f"built:{id(func.node)}", []).append(e.call)  # type: ignore[union-attr]


@on(ev.FunctionDone)
def setting_not_forwarded(scope: Scope, e: ev.FunctionDone) -> None:
    node = e.node
    calls = scope.memo.pop(f"built:{id(node)}", None)
    if not calls or scope.following or scope.cls is None or not isinstance(node, ast.FunctionDef) \
            or node.args.kwarg is not None or node.args.vararg is not None \
            or scope.callees.get(id(node), set()) & _DYNAMIC:
        return  # builds no class of the file (what the evaluator met), or may read its settings by name
    classes = getattr(scope, "classes", {})
    owner = classes.get(scope.cls.name)
    if owner is None or _init(owner) is not node:
        return
    built = [c for c in calls if c.func.id != owner.name and _init(classes[c.func.id]) is not None  # type: ignore[union-attr]
             and not any(k.arg is None for k in c.keywords) and not any(isinstance(a, ast.Starred) for a in c.args)]
    unused: Optional[set[str]] = None
    own = {a.arg for a in all_params(node)}
    for call in built:
        other = _init(classes[call.func.id])  # type: ignore[union-attr]
        positional, with_default = _defaults(other)  # type: ignore[arg-type]
        given = set(positional[:len(call.args)]) | {k.arg for k in call.keywords}
        missing = [p for p in sorted(with_default - given) if p in own]
        if not missing:
            continue
        if unused is None:
            if any(isinstance(n, ast.Attribute) and n.attr in _DYNAMIC for n in ast.walk(node)):
                return  # ``self.__dict__``: the settings may be read by name
            unused = _unused(node, owner)
        ignored = _unused(other, classes[call.func.id]) if set(missing) & unused else set()  # type: ignore[arg-type,union-attr]
        for name in missing:
            if name in unused and name not in ignored:  # a setting the built class itself ignores changes nothing
                scope.report(msg.SettingNotForwarded, call, call.func.id, name, owner.name)  # type: ignore[union-attr]


def all_params(init: ast.FunctionDef) -> list[ast.arg]:
    return [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs][1:]
