"""A key/value cache written by index with tensors whose dtype nothing in the function matched to it (SC152).

``index_copy`` and ``index_put`` refuse a source of another dtype. Under autocast the projections give
float16/bfloat16 keys and values while a cache buffer keeps the dtype it was made with, so the write fails;
correct code casts one to the other first (``self.k = self.k.to(k.dtype)``, ``key_states.to(k_out.dtype)``). Only
caches whose allocation the class shows are read: a cache the caller passes in was allocated where this function
cannot see its dtype (gemma_pytorch allocates its caches in the weights' dtype and never runs under autocast). A
plain slice assignment casts by itself and is not read here.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.nodes import of_type, subtree
from shapecheck.lint.scope import Scope
from shapecheck.lint.tracking import Tensor

_WRITES = {"index_copy": 2, "index_copy_": 2, "index_put": 1, "index_put_": 1}  # method -> the source's position
_CASTS = frozenset({"to", "type", "type_as", "half", "float", "bfloat16", "double"})
_ALLOCATE = frozenset({"zeros", "empty", "ones", "full", "randn", "new_zeros", "new_empty", "new_ones", "new_full"})


def _root(node: ast.expr) -> ast.expr:
    """``self.key_cache`` of ``self.key_cache[layer_idx]``: what is written into, without the indexing."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


def _matched(scope: Scope) -> tuple[frozenset[str], dict[str, frozenset[str]]]:
    """What the current function casts or builds from a dtype (receivers of ``.to``/``.type_as``/``.half`` ...,
    names assigned from anything that reads a ``.dtype``), and what each assigned name is computed from."""
    func = scope.func
    key = f"dtype_matched:{id(func.node)}"  # type: ignore[union-attr]
    if key not in scope.memo:
        cast: set[str] = set()
        made: dict[str, set[str]] = {}
        for node in ast.walk(func.node):  # type: ignore[union-attr]
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CASTS:
                cast.add(ast.unparse(_root(node.func.value)))
            elif isinstance(node, ast.Assign):
                targets = [ast.unparse(_root(t)) for t in node.targets]
                targets += [ast.unparse(n) for t in node.targets if isinstance(t, ast.Tuple) for n in t.elts]
                read = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                read |= {ast.unparse(n) for n in ast.walk(node.value) if isinstance(n, ast.Attribute)}
                if any(n.endswith(".dtype") for n in read):
                    cast |= set(targets)
                if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _WRITES
                       for n in ast.walk(node.value)):
                    continue  # ``k = cache_k.index_copy(2, pos, k)``: the write itself says nothing of the dtypes
                for target in targets:
                    made.setdefault(target, set()).update(read)
        scope.memo[key] = (frozenset(cast), {k: frozenset(v) for k, v in made.items()})
    return scope.memo[key]  # type: ignore[return-value]


def _constructed(scope: Scope) -> frozenset[str]:
    """Attributes the class allocates in ``__init__`` (``self.register_buffer("k", torch.zeros(...))``,
    ``self.k = torch.zeros(...)``): a cache whose dtype is fixed when the module is built, not by the keys it
    first receives (a cache allocated lazily from the keys has their dtype by construction)."""
    owner = getattr(scope, "classes", {}).get(scope.cls.name) if scope.cls is not None else None
    if owner is None:
        return frozenset()
    key = f"constructed_buffers:{id(owner)}"
    if key not in scope.memo:
        found: set[str] = set()
        init = next((s for s in owner.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        for node in ast.walk(init) if init is not None else ():
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "register_buffer" and len(node.args) >= 2 \
                    and isinstance(node.args[0], ast.Constant) and _allocation(node.args[1]):
                found.add(f"self.{node.args[0].value}")
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and nm.self_attr(node.targets[0]) \
                    and _allocation(node.value):
                found.add(ast.unparse(node.targets[0]))
        scope.memo[key] = frozenset(found)
    return scope.memo[key]  # type: ignore[return-value]


_NOT_FLOATING = re.compile(r"^torch\.(bool|u?int\d*|long|short)$")


def _not_floating(scope: Scope, shown: str) -> bool:
    """The function allocates ``shown`` with a boolean or integer dtype (``torch.zeros(n, dtype=torch.bool)``)."""
    return any(isinstance(a, ast.Assign) and shown in {ast.unparse(t) for t in a.targets} and _allocation(a.value)
               and _NOT_FLOATING.match(ast.unparse(nm.keyword(a.value, "dtype") or ast.Constant(None)))
               for a in of_type(scope.func.node, ast.Assign))  # type: ignore[union-attr]


def _allocation(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and (nm.dotted(node.func) or getattr(node.func, "attr", "") or "").split(
        ".")[-1] in _ALLOCATE


def _given(scope: Scope, name: str) -> bool:
    """Whether ``name`` is a parameter of the function or unpacked or indexed from one (``k_cache, v_cache =
    kv_cache``, ``cache = caches[i]``)."""
    func = scope.func
    if func is None:
        return False
    if scope.is_untouched_param(name):
        return True
    for node in of_type(func.node, ast.Assign):
        root = _root(node.value)  # type: ignore[attr-defined]
        if isinstance(root, ast.Name) and root.id in func.params and any(
                isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
                for t in node.targets for n in subtree(t)):  # type: ignore[attr-defined]
            return True
    return False


@on(ev.NamedCall, reports=("SC152",))
def cache_dtype_unmatched(scope: Scope, e: ev.NamedCall) -> None:
    """``k = self.k.index_copy_(2, input_pos, k)`` (litgpt, 91014a77) or ``cache_k.index_copy(2, input_pos, k)``
    (8c57db26) with no cast of either in the function."""
    call = e.call
    position = _WRITES.get(e.name)
    if position is None or scope.func is None or scope.following or not isinstance(call.func, ast.Attribute):
        return
    if nm.is_namespace(call.func.value):  # torch.index_copy(cache, dim, index, source)
        receiver: Optional[ast.expr] = call.args[0] if call.args else None
        position += 1
    else:
        receiver = call.func.value
    source = nm.argument(call, position, "source" if "copy" in e.name else "values")
    if receiver is None or not isinstance(source, ast.Name) or not isinstance(scope.values.get(id(source)), Tensor):
        return
    cache = _root(receiver)
    if not isinstance(cache, (ast.Name, ast.Attribute)) or isinstance(cache, ast.Name) and (
            cache.id == source.id or _given(scope, cache.id)):
        return  # a cache the caller made (``k_cache, v_cache = kv_cache``), or a helper that writes what it is given
        # (``batched_index_copy_(t, dim, idx, val)``): its dtype is decided where it was allocated, not seen here
    shown = ast.unparse(cache)
    if isinstance(cache, ast.Attribute) and shown not in _constructed(scope):
        return  # an attribute allocated elsewhere (lazily, from the keys it first stores): its dtype is not known
    if _not_floating(scope, shown):
        return  # a boolean or integer buffer (the slots to reset) holds no keys or values: autocast leaves it alone
    cast, made = _matched(scope)
    if shown in cast or source.id in cast or source.id in made.get(shown, ()) or shown in made.get(source.id, ()):
        return  # cast here, or one computed from the other (``keys = key_states.new_zeros(...)``)
    scope.report(msg.CacheDtypeUnmatched, call, f"{ast.unparse(call.func)}(...)", source.id, shown, e.name)
