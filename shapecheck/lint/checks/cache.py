"""Attention over keys that include a cache (SC128), and a rotary embedding applied twice (SC129).

With a key/value cache the keys are longer than the queries, and the causal mask must be aligned to the
bottom-right (query i sees keys up to ``k_len - q_len + i``). SDPA's ``is_causal=True`` and a causal buffer
sliced ``[:q_len, :q_len]`` align it top-left: with a cache, a query sees too few keys.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.scope import Scope

_CACHE = re.compile(r"past|cache|prev|memory_kv|layer_past", re.I)
_CAUSAL = re.compile(r"bias|mask|causal|tril", re.I)
_ROTARY = re.compile(r"rotary|rope|apply_rot|rotate", re.I)


def _cached_keys(scope: Scope) -> frozenset[str]:
    """Names of the current function that hold keys with a cache in front: ``k = torch.cat([past_k, k], dim=-2)``,
    ``k, v = cache.update(k, v, ...)``."""
    func = scope.func
    if func is None:
        return frozenset()
    key = f"cached_keys:{id(func.node)}"
    if key not in scope.memo:
        found = set()
        for node in ast.walk(func.node):
            if not isinstance(node, ast.Assign):
                continue
            value = node.value
            callee = (nm.dotted(value.func) or "") if isinstance(value, ast.Call) else ""
            is_cat = callee.split(".")[-1] == "cat" and value.args and isinstance(value.args[0], (ast.Tuple, ast.List)) \
                and any(_CACHE.search(n) for n in nm.identifiers(value.args[0]))  # type: ignore[union-attr]
            is_update = isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr == "update" and any(_CACHE.search(n) for n in nm.identifiers(value.func.value))
            if is_cat or is_update:
                for target in node.targets:
                    found |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        scope.memo[key] = frozenset(found)
    return scope.memo[key]  # type: ignore[return-value]


def _guarded(scope: Scope, node: ast.AST) -> bool:
    """Inside an ``if`` (or a conditional expression) that tests the cache or a length."""
    func = scope.func
    if func is None:
        return False
    for test_owner in ast.walk(func.node):
        if isinstance(test_owner, (ast.If, ast.IfExp)) and any(sub is node for sub in ast.walk(test_owner)):
            words = nm.identifiers(test_owner.test)
            if any(_CACHE.search(w) or w in ("shape", "size") for w in words):
                return True
    return False


@on(ev.FusedAttention)
def causal_with_cache(scope: Scope, e: ev.FusedAttention) -> None:
    causal = nm.keyword(e.call, "is_causal") or nm.keyword(e.call, "causal")
    if not (isinstance(causal, ast.Constant) and causal.value is True) or len(e.call.args) < 2:
        return
    key = e.call.args[1]
    if isinstance(key, ast.Name) and key.id in _cached_keys(scope) and not _guarded(scope, e.call):
        scope.report(msg.CausalWithCache, causal, f"{e.name}(..., is_causal=True)", key.id)


def _top_left(node: ast.expr) -> Optional[str]:
    """``m[..., :T, :T]``: two trailing slices from the start to the same bound (a square, top-left block)."""
    if not isinstance(node, ast.Subscript) or not _CAUSAL.search(ast.unparse(node.value)):
        return None
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if len(parts) < 2:
        return None
    a, b = parts[-2], parts[-1]
    if all(isinstance(p, ast.Slice) and p.lower is None and p.upper is not None and p.step is None for p in (a, b)) \
            and ast.dump(a.upper) == ast.dump(b.upper):  # type: ignore[union-attr, arg-type]
        return ast.unparse(node)
    return None


def _slice_with_cache(scope: Scope, mask: Optional[ast.expr], at: ast.AST) -> None:
    if mask is None or not _cached_keys(scope):
        return
    for sub in ast.walk(mask):
        shown = _top_left(sub)  # type: ignore[arg-type]
        if shown is not None and not _guarded(scope, at):
            scope.report(msg.CausalWithCache, sub, shown, ", ".join(sorted(_cached_keys(scope))))
            return


@on(ev.MaskedFill)
def sliced_mask_with_cache(scope: Scope, e: ev.MaskedFill) -> None:
    _slice_with_cache(scope, e.mask, e.call)


@on(ev.MaskAdded)
def sliced_bias_with_cache(scope: Scope, e: ev.MaskAdded) -> None:
    _slice_with_cache(scope, e.mask, e.node)


def _rotary_twice(scope: Scope) -> None:
    """``q = apply_rotary(q, ...)`` twice on one tensor in one function, with no new value in between."""
    func = scope.func
    if func is None or scope.following:
        return
    key = f"rotary_twice:{id(func.node)}"
    if key in scope.memo:
        return
    scope.memo[key] = True
    rotated: dict[str, ast.Call] = {}
    for stmt in sorted((n for n in ast.walk(func.node) if isinstance(n, ast.Assign)), key=lambda n: n.lineno):
        calls = [c for c in ast.walk(stmt.value) if isinstance(c, ast.Call)
                 and _ROTARY.search((nm.dotted(c.func) or getattr(c.func, "attr", "")) or "")]
        targets = [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        args = {a.id for c in calls for a in c.args if isinstance(a, ast.Name)}
        for name in args & set(targets):
            if name in rotated and _same_block(func.node, rotated[name], stmt):
                scope.report(msg.RotaryTwice, stmt, name, rotated[name].lineno)
            rotated[name] = stmt  # type: ignore[assignment]
        for name in set(targets) - args:
            rotated.pop(name, None)  # a new value: not rotated yet


def _same_block(func: ast.AST, first: ast.AST, second: ast.AST) -> bool:
    """Both statements in the same statement list (so both run, one after the other)."""
    for node in ast.walk(func):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and first in body and second in body:
                return True
    return False


@on(ev.Softmax)
def rotary_twice_before_softmax(scope: Scope, e: ev.Softmax) -> None:
    _rotary_twice(scope)


@on(ev.FusedAttention)
def rotary_twice_before_fused(scope: Scope, e: ev.FusedAttention) -> None:
    _rotary_twice(scope)
