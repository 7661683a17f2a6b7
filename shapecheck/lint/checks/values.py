"""What a value is, by where it comes from: a helper's tuple taken as one tensor (SC170), a tuple written into by
item (SC178), integer positions made in the activations' dtype, inexact in half precision (SC171), a method a tensor
does not have (SC179)."""

from __future__ import annotations

import ast
import difflib
import functools
import re
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.nodes import blocks, of_type, subtree, walk
from shapecheck.lint.scope import Scope
from shapecheck.lint.tensor_attributes import TENSOR_ATTRIBUTES


@on(ev.FunctionDone)
def tuple_as_tensor(scope: Scope, e: ev.FunctionDone) -> None:
    """``mask = pad_to_multiple(mask, w)`` where every ``return`` of that function of this file is a pair
    ``(padded, tensor)``, and ``mask`` is then used as a tensor: it is the pair."""
    func = scope.func
    if func is None or func.node is not e.node or scope.following:
        return
    arities = _tuple_arities(scope)
    if not arities or not scope.mentions(func.node, _called(scope, arities)) or not any(isinstance(n.func, ast.Name) and n.func.id in arities
                              for n in of_type(func.node, ast.Call)):
        return
    uses = _uses(func.node)
    for stmt in of_type(func.node, ast.Assign):
        if not (len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name)
                and stmt.value.func.id in arities):
            continue
        name = stmt.targets[0].id
        after = [u for u in uses.get(name, []) if u[0] > (stmt.end_lineno or stmt.lineno)]
        if after and min(after)[1] == "tensor":
            scope.report(msg.TupleAsTensor, stmt, name, stmt.value.func.id, arities[stmt.value.func.id])


def _tuple_arities(scope: Scope) -> dict[str, int]:
    """Module-level functions of this file whose every ``return`` is a tuple of one length n >= 2 -> n."""
    if "tuple_arities" not in scope.memo:
        found = {}
        for node in scope.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                returns = of_type(node, ast.Return)
                sizes = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else 0 for r in returns}
                if returns and len(sizes) == 1 and min(sizes) >= 2 and not _nested_functions(node):
                    found[node.name] = sizes.pop()
        scope.memo["tuple_arities"] = found
    return scope.memo["tuple_arities"]  # type: ignore[return-value]


def _called(scope: Scope, arities: dict[str, int]) -> re.Pattern:
    if "tuple_callers" not in scope.memo:
        scope.memo["tuple_callers"] = re.compile(nm.word_first(sorted(arities), r"\("))  # \b(?:f|g)\(
    return scope.memo["tuple_callers"]  # type: ignore[return-value]


def _nested_functions(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) for n in walk(node) if n is not node)


def _uses(func: ast.AST) -> dict[str, list[tuple[int, str]]]:
    """name -> (line, "tensor" or "any") for each read: "tensor" where only a tensor fits (an attribute other
    than a tuple's, arithmetic other than + and *, an argument of a torch, F or einops function where it takes a
    tensor, not a sequence)."""
    found: dict[str, list[tuple[int, str]]] = {}
    for node in walk(func):
        for child, how in _reads(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                found.setdefault(child.id, []).append((child.lineno, how))
    return found


_EINOPS = frozenset({"rearrange", "repeat", "reduce", "einsum", "pack", "unpack"})
# Where a torch, F or einops function takes a sequence, a helper's whole tuple fits: the tensors it joins
# (``torch.cat(embeds, -1)`` of a (sin, cos) pair, ``pack(parts, "b *")``), a size or data to make a tensor of
# (``torch.zeros(shape)``), the sizes, axes or paddings after the tensor (``F.pad(x, pads)``, ``x`` reshaped,
# permuted or summed over a tuple of axes), and keywords of that kind (``dim=``, ``size=``, ``kernel_size=``).
_JOINS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
                    "row_stack", "meshgrid", "atleast_1d", "atleast_2d", "atleast_3d", "pack"})  # first argument
_MAKERS = frozenset({"zeros", "ones", "empty", "full", "rand", "randn", "randint", "tensor", "as_tensor", "asarray",
                     "Size", "empty_strided"})  # every argument
_SIZED = frozenset({"reshape", "permute", "flip", "roll", "tile", "broadcast_to", "split", "tensor_split", "unflatten",
                    "movedim", "moveaxis", "rot90", "squeeze", "sum", "mean", "amax", "amin", "std", "var", "norm",
                    "logsumexp", "nansum", "pad", "interpolate", "unfold", "fold", "unpack"})  # after the first
_SEQUENCE_KEYWORDS = frozenset({"tensors", "data", "size", "sizes", "shape", "dim", "dims", "shifts", "pad",
                                "split_size_or_sections", "indices_or_sections", "sections", "source", "destination",
                                "normalized_shape", "kernel_size", "stride", "padding", "dilation", "output_size",
                                "output_padding", "scale_factor"})


def _takes_sequence(function: str, position: int) -> bool:
    """Whether the ``position``-th positional argument of torch / F / einops ``function`` may be a sequence (a pooling
    function's kernel size, stride and padding too)."""
    return (function in _JOINS and position == 0) or function in _MAKERS \
        or (position >= 1 and (function in _SIZED or "pool" in function))


def _reads(node: ast.AST) -> list[tuple[ast.expr, str]]:
    if isinstance(node, ast.Attribute):
        return [(node.value, "any" if node.attr in ("count", "index") else "tensor")]
    if isinstance(node, ast.BinOp):  # tuples add (concatenate) and multiply (repeat); nothing else
        how = "any" if isinstance(node.op, (ast.Add, ast.Mult)) else "tensor"
        return [(node.left, how), (node.right, how)]
    if isinstance(node, ast.Call):
        callee = nm.dotted(node.func) or ""
        root, last = callee.split(".")[0], callee.split(".")[-1]
        if not (root in ("torch", "F") or last in _EINOPS):
            return [(a, "any") for a in node.args] + [(k.value, "any") for k in node.keywords]
        return [(a, "any" if _takes_sequence(last, i) else "tensor") for i, a in enumerate(node.args)] \
            + [(k.value, "any" if k.arg in _SEQUENCE_KEYWORDS else "tensor") for k in node.keywords]
    return [(c, "any") for c in ast.iter_child_nodes(node) if isinstance(c, ast.Name)]


_ARANGE = re.compile(nm.word_first(["arange"], r"\("))  # \barange\(


@on(ev.FunctionDone)
def positions_in_half(scope: Scope, e: ev.FunctionDone) -> None:
    """``ticker = torch.arange(t, dtype=q.dtype)`` compared to build a window or causal mask: in float16 the
    integers stop being exact past 2048 (bfloat16: 256), so positions merge and the mask is wrong."""
    func = scope.func
    if func is None or func.node is not e.node or scope.following:
        return
    if not scope.mentions(func.node, _ARANGE) or not any(
            nm.dotted(n.func) in ("torch.arange", "arange")
            and any(k.arg == "dtype" for k in n.keywords) for n in of_type(func.node, ast.Call)):
        return
    floats = _floats(func.node)
    dtypes = _activation_dtypes(func.node, floats) | {f"{name}.dtype" for name in floats}
    if not dtypes:
        return
    made: dict[str, ast.Call] = {}
    for node in sorted(of_type(func.node, ast.Assign), key=lambda n: n.lineno):
        for target in node.targets:
            elts = target.elts if isinstance(target, ast.Tuple) else [target]
            for name, value in _pairs(elts, node.value):
                if not isinstance(name, ast.Name):
                    continue
                call = _positions_in(value, dtypes) or made.get(_source(value) or "")
                if call is not None:
                    made[name.id] = call
                else:
                    made.pop(name.id, None)
    reported: set[int] = set()
    for node in walk(func.node):
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Lt, ast.Gt, ast.LtE, ast.GtE, ast.Eq)):
            for side in (node.left, *node.comparators):
                root = nm.chain_root(side)
                call = made.get(root) if root is not None else None
                if call is not None and id(call) not in reported:
                    reported.add(id(call))
                    scope.report(msg.PositionsInHalf, call, ast.unparse(_dtype_of(call)))


def _floats(func: ast.AST) -> set[str]:
    """Names the function uses as floating activations: operands of ``@`` or einsum, what a submodule is called on
    (``self.proj(x)``), what a tensor is cast to (``.type_as(q)``), what a square-root factor scales."""
    found: set[str] = set()
    for node in walk(func):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            found |= {n.id for n in (node.left, node.right) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)) and "0.5" in ast.unparse(node.right):
            found |= {node.left.id} if isinstance(node.left, ast.Name) else set()
        elif isinstance(node, ast.Call):
            callee = nm.dotted(node.func) or ""
            if nm.self_attr(node.func) is not None or callee.split(".")[-1] in ("einsum", "type_as", "softmax"):
                found |= {a.id for a in node.args if isinstance(a, ast.Name)}
    return found


def _activation_dtypes(func: ast.AST, floats: set[str]) -> set[str]:
    """Local names bound to a floating activation's dtype (``dtype = q.dtype``, ``b, t, device, dtype = *q.shape,
    q.device, q.dtype``)."""
    found = set()
    for node in walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                elts = target.elts if isinstance(target, ast.Tuple) else [target]
                for t, v in _pairs(elts, node.value):
                    if isinstance(t, ast.Name) and isinstance(v, ast.Attribute) and v.attr == "dtype" \
                            and isinstance(v.value, ast.Name) and v.value.id in floats:
                        found.add(t.id)
    return found


def _pairs(elts: list[ast.expr], value: ast.expr) -> list[tuple[ast.expr, ast.expr]]:
    """Target and value, one by one: ``a, b = x, y``; after a starred value, from the end (``b, t, dtype =
    *q.shape[:2], q.dtype``)."""
    if len(elts) == 1:
        return [(elts[0], value)]
    if not isinstance(value, ast.Tuple):
        return []
    starred = [i for i, v in enumerate(value.elts) if isinstance(v, ast.Starred)]
    if not starred:
        return list(zip(elts, value.elts)) if len(elts) == len(value.elts) else []
    after = len(value.elts) - starred[-1] - 1
    return list(zip(elts[len(elts) - after:], value.elts[len(value.elts) - after:])) if after else []


def _dtype_of(call: ast.Call) -> ast.expr:
    return next(k.value for k in call.keywords if k.arg == "dtype")


def _positions_in(value: ast.expr, dtypes: set[str]) -> Optional[ast.Call]:
    """The ``torch.arange(..., dtype=<an activation's dtype>)`` at the root of ``value``, else None."""
    node = value
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "reshape", "view", "unsqueeze", "expand", "repeat", "flatten"):
            node = node.func.value
        else:
            break
    if not (isinstance(node, ast.Call) and nm.dotted(node.func) in ("torch.arange", "arange")):
        return None
    dtype = next((k.value for k in node.keywords if k.arg == "dtype"), None)
    return node if dtype is not None and ast.unparse(dtype) in dtypes else None  # ``dtype=dtype``, ``dtype=q.dtype``


def _source(value: ast.expr) -> Optional[str]:
    """The name a value is made from: ``b_t = ticker.reshape(...)``, ``bq_k = look_around(b_t, ...)``."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.args:
        return nm.chain_root(value.args[0])
    return nm.chain_root(value)



@on(ev.FunctionDone)
def tuple_item_assigned(scope: Scope, e: ev.FunctionDone) -> None:
    """``self.kv_cache[0] = new_keys`` where every value this class (or, outside a class, this function) stores in
    ``self.kv_cache`` is a tuple: tuples take no item assignment, so the line raises."""
    func = scope.func
    if func is None or func.node is not e.node or scope.following:
        return
    for stmt in of_type(func.node, ast.Assign):
        for target in stmt.targets:  # type: ignore[attr-defined]
            if isinstance(target, ast.Subscript):
                made = _only_tuples(scope, target.value)
                if made is not None:
                    scope.report(msg.TupleItemAssigned, stmt, ast.unparse(target.value), made)


def _only_tuples(scope: Scope, holder: ast.expr) -> Optional[int]:
    """The line of the first tuple stored in ``holder`` (a local name, or ``self.attr``) when every store of it where
    it can be stored (the function for a name; ``_units`` for an attribute) is a plain assignment of a tuple or of
    None; None otherwise."""
    func = scope.func
    attr = nm.self_attr(holder)
    if isinstance(holder, ast.Name):
        if holder.id in func.params:  # type: ignore[union-attr]
            return None
        units, wanted = [func.node], lambda t: isinstance(t, ast.Name) and t.id == holder.id  # type: ignore[union-attr]
    elif attr is not None:
        units = _units(scope)
        if not units:
            return None  # a method of a class nested in another: its other methods are not looked at
        wanted = lambda t: nm.self_attr(t) == attr  # noqa: E731
    else:
        return None
    lines = []
    for unit in units:
        for node in walk(unit):
            if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With)) and any(
                    wanted(t) for t in walk(getattr(node, "target", None) or node)
                    if isinstance(t, (ast.Name, ast.Attribute)) and isinstance(t.ctx, ast.Store)):
                return None  # another kind of store
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if wanted(target):
                        if _tuple_made(node.value):
                            lines.append(node.lineno)
                        elif not (isinstance(node.value, ast.Constant) and node.value.value is None):
                            return None  # (None takes no item assignment either)
                    elif isinstance(target, (ast.Tuple, ast.List)) and any(wanted(t) for t in walk(target)):
                        return None  # unpacked into: its value is not read here
    return min(lines) if lines else None


def _tuple_made(value: ast.expr) -> bool:
    return isinstance(value, ast.Tuple) or isinstance(value, ast.Call) and nm.dotted(value.func) == "tuple"


def _units(scope: Scope) -> list[ast.AST]:
    """Where ``self.x`` may be stored: every method of the current function's class (a class at the module's top
    level), or, for a function outside a class (a ``forward`` patched in), every function of the module."""
    owner = scope.func.method_of  # type: ignore[union-attr]
    if owner is None:
        return [s for s in scope.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))] \
            or [scope.func.node]  # type: ignore[union-attr]
    for node in scope.tree.body:
        if isinstance(node, ast.ClassDef) and node.name == owner.name:
            return [s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return []


@functools.lru_cache(maxsize=4096)
def _close_methods(name: str) -> tuple[str, ...]:
    """The tensor methods at most a letter or two from ``name``: difflib's ratio >= 0.85, looked for only among the
    names whose lengths allow it (the ratio is at most 2 * shorter / both lengths)."""
    near = [m for m in TENSOR_ATTRIBUTES if 2 * min(len(m), len(name)) >= 0.85 * (len(m) + len(name))]
    return tuple(difflib.get_close_matches(name, near, n=2, cutoff=0.85))


_BUILTIN_METHODS = frozenset(name for kind in (dict, list, tuple, set, str, bytes, int, float) for name in dir(kind))


@on(ev.TensorMethod, reports=("SC179",))
def tensor_method_misspelled(scope: Scope, e: ev.TensorMethod) -> None:
    """``scores.mask_fill_(...)`` on a tensor the function made: no such method, and one a letter or two away
    exists. A name far from every method is left alone (a subclass's own method, a newer torch's)."""
    if e.name in TENSOR_ATTRIBUTES or e.name.startswith("__") or e.name in _BUILTIN_METHODS:
        return  # ``state_dict.items()``: lint's tensors may be a dict, a list or a string at run time
    close = _close_methods(e.name)
    if close and _made_by_torch(scope, e.call.func.value):  # type: ignore[attr-defined]
        receiver = ast.unparse(e.call.func.value)  # type: ignore[attr-defined]
        scope.report(msg.TensorMethodMisspelled, e.call, e.name, f"'{receiver}'" if len(receiver) <= 40 else "it",
                     " or ".join(close))


def _torch_names(scope: Scope) -> frozenset[str]:
    """The module's names for torch and its modules: ``torch``, ``F`` (``torch.nn.functional``), ``nn``."""
    if "torch_names" not in scope.memo:
        found = set()
        for node in scope.tree.body:
            if isinstance(node, ast.Import):
                found |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] == "torch"}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
                found |= {a.asname or a.name for a in node.names if a.name[:1].islower()}
        scope.memo["torch_names"] = frozenset(found)
    return scope.memo["torch_names"]  # type: ignore[return-value]


def _made_by_torch(scope: Scope, node: ast.expr, depth: int = 0) -> bool:
    """Whether ``node`` is, by where it comes from, a tensor torch made: a torch function's result (not a class
    built, nor ``torch.load``'s dict), a tensor method's, an item or an operation of such, or a local every store of
    which is one. A parameter, or anything that comes from one, may be any object."""
    if depth > 6:
        return False
    again = lambda sub: _made_by_torch(scope, sub, depth + 1)  # noqa: E731
    if isinstance(node, ast.Subscript):
        return again(node.value)
    if isinstance(node, ast.BinOp):
        return again(node.left) or again(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        dotted = nm.dotted(node.func) or ""
        root, last = dotted.split(".")[0], node.func.attr
        if dotted and root in _torch_names(scope):
            return last[:1].islower() and last not in ("load", "split", "chunk", "unbind", "broadcast_tensors")
        return last in TENSOR_ATTRIBUTES and again(node.func.value)
    if isinstance(node, ast.Name) and scope.func is not None and node.id not in scope.func.params:
        values = _values_at(scope.func.node, node)
        return bool(values) and all(again(v) for v in values)
    return False


def _values_at(func: ast.AST, use: ast.Name) -> list[ast.expr]:
    """What local ``use`` may hold where it is read: the last plain assignment above it where that one always runs
    first (its statement list holds the use) and none comes after the use (a loop could bring it back); else every
    value assigned to it. [] where some binding is neither a plain assignment nor an update in place (a loop target,
    an unpacking)."""
    stores = sorted((a for a in of_type(func, ast.Assign) if any(isinstance(t, ast.Name) and t.id == use.id
                                                                for t in a.targets)), key=lambda a: a.lineno)
    bound = sum(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == use.id
                for n in of_type(func, ast.Name))
    updates = sum(isinstance(a.target, ast.Name) and a.target.id == use.id for a in of_type(func, ast.AugAssign))
    if not stores or len(stores) + updates != bound:  # ``t *= c`` keeps a tensor a tensor
        return []
    before = [a for a in stores if (a.end_lineno or a.lineno) < use.lineno]
    own = [a for a in stores if a.lineno <= use.lineno <= (a.end_lineno or a.lineno)]  # ``t = t.f(t)`` reads the old t
    if before and len(before) + len(own) == len(stores) and _runs_before(func, before[-1], use):
        return [before[-1].value]
    return [a.value for a in stores]


def _runs_before(func: ast.AST, stmt: ast.stmt, use: ast.AST) -> bool:
    """``stmt`` always runs before ``use``: a later statement of ``stmt``'s own statement list holds ``use``."""
    for block in blocks(func):
        if stmt in block:
            return any(use in subtree(later) for later in block[block.index(stmt) + 1:])
    return False
