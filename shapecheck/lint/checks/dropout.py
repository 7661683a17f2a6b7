"""Dropout left on in eval mode: functional dropout without ``training=`` (SC110), a fused attention's
``dropout_p`` with no training check (SC114) or given a dropout module (SC115); and the mode itself overwritten by
``forward`` (SC190)."""

from __future__ import annotations

import ast
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.scope import Scope
from shapecheck.lint.nodes import of_type, subtree, walk


@on(ev.FunctionalDropout)
def functional_dropout(scope: Scope, e: ev.FunctionalDropout) -> None:
    method = scope.in_module_method()
    name, call = e.name, e.call
    if method is None or name.split(".")[-1].rstrip(")") not in nm.DROPOUT or name.startswith("torch.dropout"):
        return
    if nm.keyword(call, "training") is None and len(call.args) < 3 and not _callers_probability(scope, call) \
            and not _guarded_by_training(scope, call):  # ``if p > 0 and self.training: attn = F.dropout(attn, p)``
        scope.report(msg.DropoutAlwaysOn, call, name, method)


def _callers_probability(scope: Scope, call: ast.Call) -> bool:
    """``dropout(x, p=dropout_p)`` with ``dropout_p`` a parameter of the function (or a literal 0): the caller
    decides the rate, and zeroes it in eval where it should (``dropout_p=0.0 if not self.training else ...``)."""
    p = nm.argument(call, 1, "p")
    if isinstance(p, ast.Constant) and p.value == 0 or p is not None and _mentions_training(p):
        return True  # a literal 0, or a rate that tests training itself (``self.p if self.training else 0.0``)
    func = scope.func
    return isinstance(p, ast.Name) and func is not None and (
        p.id in func.params and p.id not in func.assigned or _chosen_by_training(scope, p.id))


@on(ev.FusedAttention)
def fused_dropout(scope: Scope, e: ev.FusedAttention) -> None:
    """``dropout_p=self.p`` (a module attribute, read every call) with no ``training`` anywhere on its way."""
    method = scope.in_module_method()
    p = e.dropout
    if method is None or p is None:
        return
    made = _dropout_module(scope, p)
    if made is not None:
        scope.report(msg.DropoutModuleAsProbability, e.call, ast.unparse(p), made.lineno)
        return
    if _attribute_probability(scope, p, 0) and not _guarded_by_training(scope, e.call) \
            and not _taken_only_at_rate_zero(scope, e.call, p):
        scope.report(msg.SdpaDropoutAlwaysOn, p, e.name, ast.unparse(p), method)  # at the argument's own line


def _dropout_module(scope: Scope, p: ast.expr) -> Optional[ast.Call]:
    attr = nm.self_attr(p)
    made = scope.class_attr(attr) if attr else None
    if isinstance(made, ast.Call) and (nm.dotted(made.func) or "").split(".")[-1] == "Dropout":
        return made
    return None


def _attribute_probability(scope: Scope, node: ast.expr, depth: int) -> bool:
    """True when ``node`` is ``self.x`` (or a local name bound to it) and never mentions ``training``."""
    if _mentions_training(node):
        return False
    if nm.self_attr(node) is not None:
        if _set_by_a_method(scope, nm.self_attr(node)):  # type: ignore[arg-type]
            return False  # ``update_dropout(p)`` sets it: the owner manages the rate (0 at inference), not lint's to know
        made = scope.class_attr(nm.self_attr(node))  # type: ignore[arg-type]
        return made is None or not _mentions_training(made)
    if isinstance(node, ast.Attribute) and (nm.dotted(node) or "").startswith("self."):
        return True  # self.attn_drop.p, self.config.attention_dropout: set once, read every call
    if isinstance(node, ast.Name) and _chosen_by_training(scope, node.id):
        return False
    if isinstance(node, ast.Name) and node.id in scope.scalars and depth < 3:
        return _attribute_probability(scope, scope.scalars[node.id], depth + 1)
    return False


def _chosen_by_training(scope: Scope, name: str) -> bool:
    """``if not self.training: p = 0.0 else: p = self.p``: the rate is set under a test of ``training``."""
    func = scope.func
    return func is not None and any(
        _mentions_training(node.test) and any(
            isinstance(t, ast.Name) and t.id == name and isinstance(t.ctx, ast.Store)
            for stmt in node.body + node.orelse for t in ast.walk(stmt))
        for node in of_type(func.node, ast.If))


def _set_by_a_method(scope: Scope, attr: str) -> bool:
    """Whether a method of the class other than ``__init__`` assigns ``self.<attr>``."""
    cls = scope.cls
    return cls is not None and any(
        nm.self_attr(target) == attr
        for name, method in cls.methods.items() if name != "__init__"
        for node in walk(method) if isinstance(node, (ast.Assign, ast.AugAssign))
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target]))


def _taken_only_at_rate_zero(scope: Scope, call: ast.Call, p: ast.expr) -> bool:
    """Whether an ``if`` whose body holds the call tests the rate is 0, itself or through a flag ``__init__`` set so
    (``self.flash = hasattr(F, 'scaled_dot_product_attention') and self.dropout == 0.0``; ``if self.flash:``)."""
    rate = ast.dump(p)
    for node in _around(scope, call, ast.If):
        if any(sub is call for s in node.orelse for sub in subtree(s)):  # type: ignore[attr-defined]
            continue
        test = node.test  # type: ignore[attr-defined]
        tests = [test] + [made for n in subtree(test) if (a := nm.self_attr(n)) is not None
                          and (made := scope.class_attr(a)) is not None]
        if any(_is_zero_test(c, rate) for t in tests for c in subtree(t)):
            return True
    return False


def _is_zero_test(node: ast.AST, rate: str) -> bool:
    return isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq) \
        and ast.dump(node.left) == rate and isinstance(node.comparators[0], ast.Constant) \
        and node.comparators[0].value == 0


def _mentions_training(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Name, ast.Attribute)) and "training" in (getattr(n, "id", None) or
               getattr(n, "attr", "")) for n in ast.walk(node))


def _guarded_by_training(scope: Scope, call: ast.Call) -> bool:
    """Whether the enclosing function tests ``training`` in an ``if`` that contains the call."""
    return any(_mentions_training(node.test) for kind in (ast.If, ast.IfExp)  # type: ignore[attr-defined]
               for node in _around(scope, call, kind))


def _around(scope: Scope, call: ast.Call, kind: type) -> list[ast.AST]:
    """The ``if`` statements (or ``a if c else b``) of the enclosing function that contain the call."""
    func = scope.func
    if func is None:
        return []
    return [node for node in of_type(func.node, kind) if any(sub is call for sub in subtree(node))]


@on(ev.FunctionDone, reports=("SC190",))
def mode_written_in_forward(scope: Scope, e: ev.FunctionDone) -> None:
    """``self.training = False`` in ``forward``: every call sets the module's mode, so ``model.train()`` no longer
    reaches it, and each branch on ``self.training`` after it takes the eval path in training too (Telechat
    a7ee9e04)."""
    func = scope.func
    node = e.node
    if func is None or func.node is not node or scope.following or scope.cls is None \
            or getattr(node, "name", "") != "forward":
        return  # (``__call__`` of a class of its own, a validator's ``self.training = trainer is not None``, is its
        # own flag)
    for a in of_type(node, ast.Assign):
        for target in a.targets:  # type: ignore[attr-defined]
            if nm.self_attr(target) == "training" and _derived(scope, scope.cls.name):
                scope.report(msg.ModeWrittenInForward, target, ast.unparse(a.value))  # type: ignore[attr-defined]


def _derived(scope: Scope, name: str) -> bool:
    """The file's class of that name derives from something (a torch module, as far as a file can tell)."""
    blocks = [scope.tree.body]  # the module's classes and those nested in classes: no walk into functions
    while blocks:
        for stmt in blocks.pop():
            if isinstance(stmt, ast.ClassDef):
                if stmt.name == name and stmt.bases:
                    return True
                blocks.append(stmt.body)
    return False
