"""A mask made and applied to nothing (SC173): a value stored under a mask parameter's name, or still holding a
mask by data flow, that no path reads afterwards (``shapecheck.lint.liveness``). The mask the code built is then
never applied: padding attends, a causal or window constraint is lost, or the caller's mask is dropped."""

from __future__ import annotations

import ast
import re

from shapecheck.vocabulary import forward_role
from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.checks.siblings import name_uses, stand_in_for, stands_in
from shapecheck.lint.liveness import dead_stores
from shapecheck.lint.nodes import of_type, walk
from shapecheck.lint.scope import Scope, all_args

_MASK_TEXT = re.compile(r"mask", re.I)
_MASK_ROLES = frozenset({"mask", "encoder_mask"})
_BUILDERS = frozenset({"triu", "tril", "logical_not", "logical_and", "logical_or"})
# what a function gives back from a mask that is no mask: a count or a reduction over it
_REDUCTIONS = frozenset({"reduce", "sum", "any", "all", "count_nonzero", "nonzero", "argmax", "argmin", "max", "min",
                         "amax", "amin", "mean", "cumsum", "numel"})
_COUNTING = frozenset({"range", "enumerate"})
# What describes a tensor rather than holding its values: a mask's dtype, shape or type name is no mask.
_DESCRIBES = frozenset({"type", "dim", "ndimension", "size", "numel", "nelement", "element_size", "is_contiguous",
                        "is_floating_point", "data_ptr", "get_device", "stride", "storage_offset"})  # methods
_DESCRIBED = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad"})  # attributes
_RELAYOUT = frozenset({"transpose", "permute", "view", "reshape", "contiguous", "squeeze", "unsqueeze", "flatten",
                       "movedim", "mT", "t"})
_BLOCKS = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_INTEGERS = frozenset({"len", "int", "range"})


def _is_mask(name: str) -> bool:
    return forward_role(name) in _MASK_ROLES


def _describes(node: ast.expr) -> bool:
    """``m.type()``, ``m.size(-1)``, ``m.shape``, ``m.dtype``: what describes a tensor, not its values."""
    if isinstance(node, ast.Call):  # ``m.type(torch.float)`` converts: a mask still; ``m.type()`` names its type
        return isinstance(node.func, ast.Attribute) and node.func.attr in _DESCRIBES \
            and not (node.func.attr == "type" and (node.args or node.keywords))
    return isinstance(node, ast.Attribute) and node.attr in _DESCRIBED


def _unpacked_sizes(func: ast.AST) -> set[str]:
    """Names unpacked from a shape: ``B, H, M, D = q.shape`` (or ``q.size()``), or from a parameter annotated as a
    tuple of ints (``shape: tuple[int, int, int, int]``): sizes, never masks."""
    ints = {a.arg for a in all_args(func.args) if a.annotation is not None  # type: ignore[attr-defined]
            and re.search(r"^(tuple|Tuple|Sequence|list|List)\[int\b", ast.unparse(a.annotation))} \
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
    found = set()
    for node in of_type(func, ast.Assign):
        value = node.value
        shape = isinstance(value, ast.Attribute) and value.attr == "shape" \
            or isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size" \
            and not value.args or isinstance(value, ast.Name) and value.id in ints
        if shape and isinstance(node.targets[0], ast.Tuple):
            found |= {e.id for e in node.targets[0].elts if isinstance(e, ast.Name)}
    return found


class _Masks:
    """The names of one function that hold a mask: its mask parameters, what it builds as one (a comparison of
    tensors, ``triu``/``tril``) and what still carries one (``m.view(...)``, ``m[keep]``, ``~m``, ``m & w``,
    ``F.pad(m, ...)``, a bias filled or chosen by one)."""

    def __init__(self, func: ast.AST, params: frozenset[str]) -> None:
        self.counters = {_first(n.target) for n in walk(func) if isinstance(n, (ast.For, ast.comprehension))
                         and isinstance(n.iter, ast.Call) and isinstance(n.iter.func, ast.Name)
                         and n.iter.func.id in _COUNTING} | _unpacked_sizes(func)
        self.names = {p for p in params if _is_mask(p)}
        assigns = [n for n in walk(func) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                   and n.value is not None and len(_targets(n)) == 1 and isinstance(_targets(n)[0], ast.Name)]
        assigns.sort(key=lambda n: n.lineno)
        for _ in range(2):  # in source order; once more for what a loop carries back to its top
            before = len(self.names)
            for node in assigns:
                name = _targets(node)[0].id  # type: ignore[attr-defined]
                if name not in self.names and (self.carries(node.value) or isinstance(node, ast.AugAssign)
                                               and name in self.names):
                    self.names.add(name)
            if len(self.names) == before:
                break

    def carries(self, value: ast.expr) -> bool:
        node = value
        while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)) and not self.fills(node) \
                and not self.builds(node):
            if _describes(node):
                return False
            if isinstance(node, ast.Call) and (not isinstance(node.func, ast.Attribute)
                                               or nm.self_attr(node.func) is not None or nm.is_namespace(node.func.value)):
                return self.handed_on(node)
            node = node.func.value if isinstance(node, ast.Call) else node.value  # type: ignore[union-attr]
        if self.fills(node) or self.builds(node):
            return True
        if isinstance(node, ast.UnaryOp):
            return self.carries(node.operand)
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):  # weights @ v are no mask
            return self.carries(node.left) or self.carries(node.right)
        if isinstance(node, ast.IfExp):
            return self.carries(node.body) or self.carries(node.orelse)
        return isinstance(node, ast.Name) and node.id in self.names

    def handed_on(self, call: ast.Call) -> bool:
        """``F.pad(m, ...)``, ``repeat(m, 'b j -> b 1 1 j')``, ``default(m, ...)``: a function (not a module, not
        a reduction, not ``zeros_like``, which reads the shape alone) given the mask first gives it back."""
        name = (nm.dotted(call.func) or "").split(".")[-1]
        return nm.self_attr(call.func) is None and bool(call.args) and not name.endswith("_like") \
            and name not in _REDUCTIONS and self.carries(call.args[0])

    def fills(self, node: ast.AST) -> bool:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
            return False
        return node.func.attr in ("masked_fill", "masked_fill_", "where") and self.carries(node.args[0])

    def builds(self, node: ast.AST) -> bool:
        """A comparison of tensors (``ids != pad_id``, ``i >= j``; not of counts, ``ind == len(layers) - 1``),
        ``triu``/``tril``."""
        if isinstance(node, ast.Compare):
            return not any(isinstance(o, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for o in node.ops) \
                and not all(self.counted(side) for side in (node.left, *node.comparators))
        return isinstance(node, ast.Call) and (nm.dotted(node.func) or "").split(".")[-1] in _BUILDERS

    def counted(self, node: ast.expr) -> bool:
        """An integer by where it comes from: a literal, ``len(...)``, a shape, a loop counter, the module's or
        its config's attribute (``self.num_layers - 1``)."""
        if isinstance(node, ast.BinOp):
            return self.counted(node.left) or self.counted(node.right)
        return isinstance(node, ast.Constant) or nm.self_attr(node) is not None \
            or isinstance(node, ast.Name) and node.id in self.counters or any(
                isinstance(s, ast.Call) and isinstance(s.func, ast.Name) and s.func.id in _INTEGERS
                or isinstance(s, ast.Attribute) and s.attr in ("shape", "ndim", "size") for s in ast.walk(node))


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    return stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[attr-defined]


def _first(target: ast.expr) -> str:
    target = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
    return target.id if isinstance(target, ast.Name) else ""


def _computed(value: ast.expr) -> bool:
    """A call, an operation, a comparison or an item: not a constant, a plain name or attribute."""
    if isinstance(value, ast.IfExp):
        return _computed(value.body) or _computed(value.orelse)
    return isinstance(value, (ast.Call, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Subscript, ast.BoolOp))


def _relaid_after_use(func: ast.AST, name: str, stmt: ast.stmt) -> bool:
    """``mask = mask.transpose(-1, -2)`` after a call was given ``mask``: only the layout of a value already used
    changes (the mask was applied; this puts it back), nothing is lost."""
    value = stmt.value  # type: ignore[attr-defined]
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _RELAYOUT:
        value = value.func.value
    if isinstance(value, ast.Call) and (nm.dotted(value.func) or "").split(".")[-1] == "rearrange" and value.args:
        value = value.args[0]
    if not (isinstance(value, ast.Name) and value.id == name):
        return False
    return any(isinstance(n, ast.stmt) and n.lineno < stmt.lineno and not isinstance(n, _BLOCKS)
               and name not in {t.id for t in ast.walk(n) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
               and any(isinstance(t, ast.Name) and t.id == name and isinstance(t.ctx, ast.Load) for t in ast.walk(n))
               for n in walk(func))


def _bound_before(func: ast.AST, name: str, stmt: ast.stmt) -> bool:
    return any(n.lineno < stmt.lineno and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
               for n in of_type(func, ast.Assign))


@on(ev.FunctionDone, reports=("SC173",))
def mask_applied_to_nothing(scope: Scope, e: ev.FunctionDone) -> None:
    func = scope.func
    if func is None or func.node is not e.node or func.node.name == "__init__" \
            or not scope.mentions(func.node, _MASK_TEXT):
        return
    candidates = [(s, n) for s, n in dead_stores(func.node, walk(func.node))  # type: ignore[arg-type]
                  if not n.startswith("_") and s.value is not None and _computed(s.value)  # type: ignore[attr-defined]
                  and len(_targets(s)) == 1 and isinstance(_targets(s)[0], ast.Name)]  # one of several results: no
    if not candidates:
        return
    params = func.params - {"self", "cls"}
    masks, uses = _Masks(func.node, params), name_uses(func.node)
    for stmt, name in candidates:
        if isinstance(stmt, ast.AugAssign) and not _bound_before(func.node, name, stmt):
            continue  # ``m &= ...`` on what the caller gave changes the caller's tensor in place
        if stands_in(stmt, stand_in_for(stmt.value, params), params, uses):  # type: ignore[attr-defined]
            continue  # a stand-in for a parameter the code then reads: SC168 says so
        if _relaid_after_use(func.node, name, stmt):
            continue
        if _is_mask(name) or name in masks.names:
            scope.report(msg.MaskAppliedToNothing, stmt, name, ast.unparse(stmt.value)[:60])  # type: ignore[attr-defined]
