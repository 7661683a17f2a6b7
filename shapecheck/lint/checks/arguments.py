"""What a call passes: positional names in another order than the callee's parameters (SC150), and a lookup whose
default computes the very value the lookup is there to save (SC151).

Both read the call as written and, for SC150, the callee's own signature in the same file (a module function, a
method or static method of the class), or the (query, key, value) order of a fused attention kernel.
"""

from __future__ import annotations

import ast
from typing import Optional, Union

from shapecheck.lint import events as ev
from shapecheck.lint import kernels
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.scope import Scope
from shapecheck.lint.tracking import Tensor

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_LOOKUPS = frozenset({"get", "setdefault", "pop"})
_ROLE_WORDS = {"query": frozenset({"q", "query", "queries", "xq"}), "key": frozenset({"k", "key", "keys", "xk"}),
               "value": frozenset({"v", "value", "values", "xv"})}
_ALLOCATIONS = frozenset({"zeros", "ones", "empty", "full", "tensor", "arange", "zeros_like", "ones_like",
                          "empty_like", "full_like", "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})


def _parameters(scope: Scope, call: ast.Call) -> Optional[tuple[str, list[str]]]:
    """(how the callee is shown, its positional parameters as the call fills them) for a function of this file."""
    func = call.func
    if isinstance(func, ast.Name):
        helper = getattr(scope, "functions", {}).get(func.id)
        if helper is None or func.id in scope.env:
            return None
        return func.id, _positional(helper, skip=0)
    attr = nm.self_attr(func)
    if attr is None or scope.cls is None:
        return None
    owner = getattr(scope, "classes", {}).get(scope.cls.name)
    method = _method(owner, attr) if owner is not None else None
    if method is None:
        return None  # another class's forward names its roles for itself (``forward(x, context)`` called with
        # ``(context, x)`` may be the reverse direction on purpose): only the class's own methods are read
    return f"self.{attr}", _positional(method, skip=0 if nm.decorated(method, "staticmethod") else 1)


def _method(owner: ast.ClassDef, name: str) -> Optional[Function]:
    return next((s for s in owner.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name),
                None)


def _positional(function: Function, skip: int) -> list[str]:
    return [a.arg for a in [*function.args.posonlyargs, *function.args.args]][skip:]


@on(ev.NamedCall, reports=("SC150",))
def arguments_out_of_order(scope: Scope, e: ev.NamedCall) -> None:
    """``self.get_batch_per_block(sq, sk, b, np)`` for ``def get_batch_per_block(b, np, sq, sk)``: plain names that
    are parameters of the callee, each at another parameter's position, and together only trading places."""
    call = e.call
    if scope.following or any(isinstance(a, ast.Starred) for a in call.args):
        return
    given = [a.id if isinstance(a, ast.Name) else None for a in call.args]
    if sum(g is not None for g in given) < 2:
        return
    found = _parameters(scope, call)
    if found is None:
        return
    shown, params = found
    moved = [(i, params.index(g)) for i, g in enumerate(given[:len(params)])
             if g is not None and g in params and params[i] != g]
    if len(moved) < 2 or {i for i, _ in moved} != {j for _, j in moved}:
        return  # names that only trade places among themselves; anything else is not this mistake
    if {given[i] for i, _ in moved} <= set(scope.targets):
        # ``k, v, attn_mask, key_padding_mask = self._add_bias(k, v, attn_mask, key_padding_mask, bsz)``: the
        # values pass through and come back under the same swapped names (fairseq): swapped twice, nothing is lost
        return
    slots = {i for i, _ in moved}
    ordered = ", ".join(params[i] if i in slots else ast.unparse(a) for i, a in enumerate(call.args))
    scope.report(msg.ArgumentsOutOfOrder, call, shown, ", ".join(ast.unparse(a) for a in call.args),
                 ", ".join(params[:len(call.args)]), ordered)


def _computes(scope: Scope, default: ast.expr) -> bool:
    """A default that runs a module or a method of this class on something, or makes a tensor out of tensors
    (not a fresh allocation): work a cache is there to save."""
    if not isinstance(default, ast.Call) or not (default.args or default.keywords):
        return False
    attr = nm.self_attr(default.func)
    if attr is not None:
        return scope.class_attr(attr) is not None or (scope.cls is not None and attr in scope.cls.methods)
    if isinstance(default.func, ast.Name) and default.func.id in getattr(scope, "functions", {}) \
            and default.func.id not in scope.env:
        return True  # a function of this file run on the arguments
    callee = (nm.dotted(default.func) or getattr(default.func, "attr", "") or "").split(".")[-1]
    return callee not in _ALLOCATIONS and isinstance(scope.values.get(id(default)), Tensor)


@on(ev.NamedCall, reports=("SC151",))
def cache_default_evaluated(scope: Scope, e: ev.NamedCall) -> None:
    """``kv_cache.get(self.key, self.key(xa))``: Python evaluates the default before the lookup, so the projection
    runs on every call, cached or not (whisper, 9f70a352)."""
    call = e.call
    if scope.following or call.keywords:
        return
    if e.name in _LOOKUPS and isinstance(call.func, ast.Attribute) and len(call.args) == 2:
        key, default = call.args
        lookup = f"{ast.unparse(call.func)}(...)"
        cached = f"{ast.unparse(call.func.value)}[{ast.unparse(key)}]"
    elif e.name == "getattr" and isinstance(call.func, ast.Name) and len(call.args) == 3:
        owner, key, default = call.args
        lookup = "getattr(...)"
        cached = f"getattr({ast.unparse(owner)}, {ast.unparse(key)})"
    else:
        return
    if _computes(scope, default):
        scope.report(msg.CacheDefaultEvaluated, default, lookup, ast.unparse(default), cached)


def _role(name: str) -> Optional[str]:
    """"query", "key" or "value" for ``q``, ``key_states``, ``xq``, ``k_rot``, ``value_layer``; None otherwise."""
    words = set(name.lower().split("_"))
    found = [role for role, spelled in _ROLE_WORDS.items() if words & spelled]
    return found[0] if len(found) == 1 else None


@on(ev.FusedAttention, reports=("SC150",))
def fused_arguments_out_of_order(scope: Scope, e: ev.FusedAttention) -> None:
    """``F.scaled_dot_product_attention(q, v, k)``, ``flash_attn_func(k, q, v)``: the fused kernel reads (query, key,
    value) by position, and the names given say they trade places."""
    if e.name.split(".")[-1] in kernels.QKV_FIRST:
        _roles_out_of_order(scope, e.call, e.name)


@on(ev.NamedCall, reports=("SC150",))
def attention_module_arguments_out_of_order(scope: Scope, e: ev.NamedCall) -> None:
    """``self.attn(k, q, v)`` where ``self.attn = nn.MultiheadAttention(...)``: (query, key, value) by position."""
    attr = nm.self_attr(e.call.func)
    made = scope.class_attr(attr) if attr is not None else None
    if isinstance(made, ast.Call) and (nm.dotted(made.func) or "").split(".")[-1] == "MultiheadAttention":
        _roles_out_of_order(scope, e.call, f"self.{attr}")


def _roles_out_of_order(scope: Scope, call: ast.Call, shown: str) -> None:
    if scope.following or len(call.args) < 3 or not all(isinstance(a, ast.Name) for a in call.args[:3]):
        return
    roles = [_role(a.id) for a in call.args[:3]]  # type: ignore[attr-defined]
    expected = ["query", "key", "value"]
    if None in roles or len(set(roles)) != 3 or roles == expected:
        return
    given = [a.id for a in call.args[:3]]  # type: ignore[attr-defined]
    order = dict(zip(roles, given))
    more = ["..."] if call.args[3:] or call.keywords else []
    scope.report(msg.ArgumentsOutOfOrder, call, shown, ", ".join(given + more), ", ".join(expected),
                 ", ".join([order[r] for r in expected] + more))
