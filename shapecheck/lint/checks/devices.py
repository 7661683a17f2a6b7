"""Devices: a tensor made without ``device=`` in a module's method, or in a function that attends, lives on the
CPU, and meeting the inputs (on the GPU when the model is) in arithmetic, a concatenation or a fill fails there
(SC165)."""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.nodes import of_type, walk
from shapecheck.lint.scope import Scope

# torch functions that allocate a new tensor on the default device unless given ``device=``
_FACTORIES = frozenset({"zeros", "ones", "empty", "full", "arange", "rand", "randn", "randint", "eye", "linspace",
                        "tensor"})
_FACTORY_TEXT = re.compile(r"torch\.(?:%s)\(" % "|".join(sorted(_FACTORIES)))
# methods that keep a tensor where it is (what they return is still on the CPU)
_STAYS = frozenset({"bool", "float", "half", "long", "int", "double", "triu", "tril", "unsqueeze", "squeeze", "view",
                    "reshape", "expand", "repeat", "transpose", "permute", "contiguous", "masked_fill", "flip",
                    "t", "fill_", "triu_", "tril_", "logical_not", "clone", "detach", "cumsum", "exp", "log"})
# torch functions whose tensors must share a device
_COMBINE = frozenset({"cat", "stack", "where", "matmul", "bmm", "einsum", "maximum", "minimum", "logical_and",
                      "logical_or", "masked_fill", "add", "mul"})
_COMBINE_METHODS = frozenset({"masked_fill", "masked_fill_", "add", "add_", "mul", "mul_", "matmul", "bmm",
                              "logical_and", "logical_or", "where"})
_ATTENDS = re.compile(r"softmax|scaled_dot_product_attention|flash_attn|memory_efficient_attention")
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.MatMult, ast.BitAnd, ast.BitOr, ast.FloorDiv)


@on(ev.FunctionDone, reports=("SC165",))
def host_tensor_meets_inputs(scope: Scope, e: ev.FunctionDone) -> None:
    """``mask = torch.ones(n, n).triu(1)`` in ``forward`` and then ``scores.masked_fill(mask, ...)``: the mask
    is on the CPU and the scores are where the inputs are."""
    func = scope.func
    if func is None or func.node is not e.node or func.node.name == "__init__" \
            or not scope.mentions(func.node, _FACTORY_TEXT) or not _allocates(func.node):
        return
    if func.method_of is None:
        if not scope.mentions(func.node, _ATTENDS):
            return  # a function of the module: only one that attends is known to run where the model runs
    elif not func.method_of.has_forward or _called_in_init(func.method_of.methods.get("__init__"), func.node.name):
        return  # building buffers at construction: everything is on the CPU then
    flow = _Flow(func.node, _tensor_params(func.node, func.params - {"self", "cls"}))
    for node in walk(func.node):
        pair = _combined(node)
        if pair is None:
            continue
        made = next((flow.host_call(o, node.lineno) for o in pair if flow.host_call(o, node.lineno) is not None), None)
        if made is not None and any(flow.from_inputs(o, node.lineno) for o in pair):
            scope.report(msg.HostTensorMeetsInputs, node, ast.unparse(made)[:60], made.lineno)


# what only a tensor has: a parameter read so is a tensor (not a size or a flag)
_TENSOR_ATTRS = frozenset({"shape", "size", "device", "dtype", "view", "reshape", "transpose", "permute",
                           "unsqueeze", "squeeze", "masked_fill", "masked_fill_", "softmax", "contiguous", "flatten",
                           "chunk", "split", "unbind", "float", "half", "type_as", "expand", "matmul", "ndim"})
_LEAVE_INPUTS = frozenset({"len", "int", "float", "range", "tuple", "list", "torch.finfo", "torch.iinfo"})
_MOVES = frozenset({"cpu", "to", "cuda", "numpy", "tolist", "item", "type_as", "new_tensor"})


def _tensor_params(func: ast.AST, params: frozenset[str]) -> frozenset[str]:
    """The parameters the function uses as tensors (``x.shape``, ``x.view(...)``, ``self.proj(x)``, ``q @ k``)."""
    found = set()
    for node in walk(func):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in _TENSOR_ATTRS:
            found.add(node.value.id)
        elif isinstance(node, ast.Call) and nm.self_attr(node.func) is not None and node.args \
                and isinstance(node.args[0], ast.Name):
            found.add(node.args[0].id)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            found |= {n.id for n in (node.left, node.right) if isinstance(n, ast.Name)}
    return frozenset(found & params)


def _called_in_init(init: Optional[ast.AST], name: str) -> bool:
    return init is not None and any(isinstance(n, ast.Call) and nm.self_attr(n.func) == name for n in walk(init))


def _allocates(func: ast.AST) -> bool:
    return any(_factory(n) for n in of_type(func, ast.Call))


def _factory(call: ast.Call) -> bool:
    """``torch.zeros(...)`` with no ``device=`` (and not a 0-dim ``torch.tensor(1.0)``, which may meet any device)."""
    name = nm.dotted(call.func) or ""
    if not name.startswith("torch.") or name.split(".")[-1] not in _FACTORIES or name.count(".") != 1:
        return False
    if any(k.arg == "device" or k.arg is None for k in call.keywords):
        return False
    if name == "torch.tensor" or name == "torch.full" and call.args and _empty_shape(call.args[0]):
        return name == "torch.tensor" and bool(call.args) and isinstance(call.args[0], (ast.List, ast.ListComp))
    return bool(call.args) and not _empty_shape(call.args[0])


def _empty_shape(node: ast.expr) -> bool:
    return isinstance(node, (ast.Tuple, ast.List)) and not node.elts


def _combined(node: ast.AST) -> Optional[tuple[ast.expr, ...]]:
    """The operands of an operation that needs its tensors on one device."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
        return node.left, node.right
    if isinstance(node, ast.Call):
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        if receiver is not None and node.func.attr in _COMBINE_METHODS \
                and not (isinstance(receiver, ast.Name) and receiver.id in nm.MODULE_ROOTS):  # type: ignore[attr-defined]
            return (receiver, *node.args[:1])
        name = nm.dotted(node.func) or ""
        if name.startswith("torch.") and name.split(".")[-1] in _COMBINE:
            parts = [a for a in node.args if not (isinstance(a, ast.Constant))]
            if len(parts) == 1 and isinstance(parts[0], (ast.List, ast.Tuple)):
                return tuple(parts[0].elts)
            return tuple(parts)
    return None


class _Flow:
    """Where each local name was bound, in line order: to a CPU allocation, or to something made from the inputs."""

    def __init__(self, func: ast.AST, params: frozenset[str]) -> None:
        self.params = params
        self.binds: dict[str, list[tuple[int, ast.expr]]] = {}
        for node in walk(func):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for name in nm.bound_names([target]):
                        self.binds.setdefault(name, []).append((node.lineno, node.value))
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.withitem, ast.NamedExpr)):
                target = getattr(node, "target", None) or getattr(node, "optional_vars", None)
                value = getattr(node, "value", None) or getattr(node, "iter", None) or getattr(node, "context_expr", None)
                for name in nm.bound_names([target]) if target is not None else ():
                    self.binds.setdefault(name, []).append((getattr(node, "lineno", 0) or 0, value or target))
        for found in self.binds.values():
            found.sort(key=lambda b: b[0])

    def value_at(self, name: str, line: int) -> Optional[ast.expr]:
        found = self.binds.get(name)
        if not found:
            return None
        at = bisect_left([b[0] for b in found], line)
        return found[at - 1][1] if at > 0 else None

    def host_call(self, node: ast.expr, line: int, depth: int = 0) -> Optional[ast.Call]:
        """The allocation ``node`` still is, by data flow (through methods that keep the device), else None."""
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in _STAYS or node.func.attr == "cuda" and not node.args and not node.keywords):
            node = node.func.value  # ``.cuda()`` moves it to the default GPU, not to the inputs' device
        if isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Call):
            return node if _factory(node) else None
        if isinstance(node, ast.Name) and depth < 4 and node.id not in self.params:
            value = self.value_at(node.id, line)  # the last binding before this line: a move there ends it
            if value is not None:
                return self.host_call(value, value.lineno, depth + 1)
        return None

    def from_inputs(self, node: ast.expr, line: int, depth: int = 0) -> bool:
        """Whether ``node`` is made from the function's tensor arguments (its device is theirs)."""
        if isinstance(node, ast.Name):
            value = self.value_at(node.id, line)
            if node.id in self.params and value is None:
                return True  # the argument as given (rebound, it is what the rebinding made: ``q = q * s``)
            return value is not None and depth < 6 and self.from_inputs(value, getattr(value, "lineno", line), depth + 1)
        if isinstance(node, ast.Call) and nm.self_attr(node.func) is not None:
            return any(self.from_inputs(a, line, depth + 1) for a in node.args[:1])  # self.proj(x)
        if isinstance(node, ast.Call) and (isinstance(node.func, ast.Name) or isinstance(node.func, ast.Attribute)
                                           and nm.is_namespace(node.func.value)) \
                and nm.dotted(node.func) not in _LEAVE_INPUTS:
            return any(self.from_inputs(a, line, depth + 1) for a in node.args)  # einsum(eq, q, k), F.softmax(s)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr not in ("size", "dim"):
            return node.func.attr not in _MOVES and self.from_inputs(node.func.value, line, depth + 1)
        if isinstance(node, (ast.BinOp,)):
            return self.from_inputs(node.left, line, depth + 1) or self.from_inputs(node.right, line, depth + 1)
        if isinstance(node, ast.Subscript):
            return self.from_inputs(node.value, line, depth + 1)
        return False

