"""Attention over keys that include a cache (SC128), a rotary embedding applied twice (SC129) or along the heads
axis (SC132).

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
from shapecheck.lint.liveness import dead_stores
from shapecheck.lint.scope import Scope
from shapecheck.lint.nodes import of_type, other_branch, subtree, walk

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
        for node in of_type(func.node, ast.Assign):
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


def _guarded(scope: Scope, node: ast.Call) -> bool:
    """Inside an ``if`` (or a conditional expression) that tests the cache or a length, or one whose other branch
    calls the same attention with what the test reads (``if mask is None: ...is_causal=True... else:
    ...attn_mask=mask...``: the causal path is the one without a mask, and the mask serves the cache)."""
    func = scope.func
    if func is None:
        return False
    for test_owner in walk(func.node):
        if isinstance(test_owner, (ast.If, ast.IfExp)) and any(sub is node for sub in ast.walk(test_owner)):
            words = nm.identifiers(test_owner.test)
            if any(_CACHE.search(w) or w in ("shape", "size") for w in words):
                return True
            if isinstance(test_owner, ast.If) and _other_path_passes(test_owner, node, set(words)):
                return True
    return False


def _other_path_passes(branching: ast.If, call: ast.Call, tested: set[str]) -> bool:
    """The branch of ``branching`` that does not hold ``call`` calls the same function with a tested name."""
    callee = nm.dotted(call.func)
    for stmt in other_branch(branching, call):
        for other in subtree(stmt):
            if isinstance(other, ast.Call) and other is not call and nm.dotted(other.func) == callee and any(
                    isinstance(a, ast.Name) and a.id in tested for a in [*other.args, *(k.value for k in other.keywords)]):
                return True
    return False


@on(ev.FusedAttention)
def causal_with_cache(scope: Scope, e: ev.FusedAttention) -> None:
    """SDPA's ``is_causal=True`` over keys with a cache in front. flash-attn's ``causal=True`` is left alone: since
    flash-attn 2.1 it aligns the mask bottom-right, right with a cache."""
    causal = nm.keyword(e.call, "is_causal")
    if not (isinstance(causal, ast.Constant) and causal.value is True) or len(e.call.args) < 2:
        return
    query, key = e.call.args[0], e.call.args[1]
    if isinstance(key, ast.Name) and key.id in _cached_keys(scope) and not _guarded(scope, e.call) \
            and not (isinstance(query, ast.Name) and _lengthened(scope, query.id)):
        scope.report(msg.CausalWithCache, causal, f"{e.name}(..., is_causal=True)", key.id)


def _lengthened(scope: Scope, name: str) -> bool:
    """The queries are lengthened in the function too (``q = torch.cat((zeros, q), dim=1)``, ``F.pad(q, ...)``):
    as long as the keys, so the top-left causal mask lines up."""
    for node in walk(scope.func.node):  # type: ignore[union-attr]
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)):
            continue
        callee = (nm.dotted(node.value.func) or "").split(".")[-1]
        first = node.value.args[0] if node.value.args else None
        if callee == "cat" and isinstance(first, (ast.Tuple, ast.List)) \
                and any(isinstance(x, ast.Name) and x.id == name for x in first.elts):
            return True
        if callee == "pad" and isinstance(first, ast.Name) and first.id == name:
            return True
    return False


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


def _calls_like(scope: Scope, func: ast.AST, pattern: re.Pattern) -> bool:
    """Whether the function calls anything whose name matches (norms apart), from what the evaluator saw."""
    return any(pattern.search(name) and "norm" not in name.lower() for name in scope.callees.get(id(func), ()))


def _once_where_called(scope: Scope, check: str, pattern: re.Pattern) -> bool:
    """Whether a whole-body ``check`` runs now: once per function (not while following a caller's tensors),
    and only in a function that calls something matching ``pattern``."""
    func = scope.func
    if func is None or scope.following:
        return False
    key = f"{check}:{id(func.node)}"
    if key in scope.memo:
        return False
    scope.memo[key] = True
    return _calls_like(scope, func.node, pattern)


def _rotary_twice(scope: Scope) -> None:
    """``q = apply_rotary(q, ...)`` twice on one tensor in one function, with no new value in between."""
    if not _once_where_called(scope, "rotary_twice", _ROTARY):
        return
    func = scope.func
    rotated: dict[str, ast.Call] = {}
    for stmt in sorted(of_type(func.node, ast.Assign), key=lambda n: n.lineno):
        calls = [c for c in subtree(stmt.value) if isinstance(c, ast.Call) and _applies_rotary(c)]
        targets = [n.id for t in stmt.targets for n in subtree(t) if isinstance(n, ast.Name)]
        args = {a.id for c in calls for a in c.args if isinstance(a, ast.Name)}
        for name in args & set(targets):
            if name in rotated and _same_block(func.node, rotated[name], stmt):
                scope.report(msg.RotaryTwice, stmt, name, rotated[name].lineno)
            rotated[name] = stmt  # type: ignore[assignment]
        for name in set(targets) - args:
            rotated.pop(name, None)  # a new value: not rotated yet


def _callee_name(call: ast.Call) -> str:
    return (nm.dotted(call.func) or getattr(call.func, "attr", "") or "").split(".")[-1]


def _applies_rotary(call: ast.Call) -> bool:
    """``apply_rotary_pos_emb(...)``, ``self.rotary_emb.rotate_queries_or_keys(...)``; not a norm named after the
    part it normalises (``k_rope_only_layernorm``)."""
    name = _callee_name(call)
    return bool(_ROTARY.search(name)) and "norm" not in name.lower()


def _same_block(func: ast.AST, first: ast.AST, second: ast.AST) -> bool:
    """Both statements in the same statement list (so both run, one after the other)."""
    for node in walk(func):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and first in body and second in body:
                return True
    return False


@on(ev.Rotary)
def rotary_on_heads(scope: Scope, e: ev.Rotary) -> None:
    """``rotary(q, seq_len=q.shape[1])`` or ``cos[:q.size(1)]`` where q is [batch, heads, seq, d_head] by data flow,
    or ``seq_dim=1`` on such a q: the positions are read from the heads axis."""
    where = e.heads[0] if e.heads else e.axis
    if where is not None:
        callee = nm.dotted(e.call.func) or _callee_name(e.call)
        scope.report(msg.RotaryOnHeads, where, f"{callee}(...)", ast.unparse(where) if e.heads else
                     f"seq_dim={ast.unparse(where)}")


@on(ev.FunctionDone)
def rotary_twice(scope: Scope, e: ev.FunctionDone) -> None:
    _rotary_twice(scope)


_COMPUTED = re.compile(r"rotary|rope|apply_rot|softmax|masked_fill", re.I)


def _computed_unused(scope: Scope) -> None:
    """``q = apply_rotary(q, ...)`` (or a softmax, a masked fill) stored, then the name stored again before
    anything reads it, on the way that follows in the same block: the computed value is lost. A result stored in
    ``_`` is thrown away on purpose."""
    if not _once_where_called(scope, "computed_unused", _COMPUTED):
        return
    func = scope.func
    dead: Optional[set] = None  # the liveness pass runs only where a later store is found
    for block in _blocks(func.node):
        for i, stmt in enumerate(block):
            if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call) \
                    or not _COMPUTED.search(_callee_name(stmt.value)) or "norm" in _callee_name(stmt.value).lower():
                continue
            names = [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            for name in names:
                if name.strip("_") == "":
                    continue  # ``q, _ = rotary(q, k)``: thrown away on purpose
                overwritten = _next_store_unread(name, block[i + 1:])
                if overwritten is None:
                    continue
                if dead is None:
                    dead = set(dead_stores(func.node, walk(func.node)))  # type: ignore[arg-type]
                if (stmt, name) in dead:
                    scope.report(msg.ComputedUnused, stmt, name, ast.unparse(stmt.value.func), overwritten.lineno, "")
                elif _bypasses(stmt, name, overwritten):  # read only on the paths that skip the overwrite
                    scope.report(msg.ComputedUnused, stmt, name, ast.unparse(stmt.value.func), overwritten.lineno,
                                 " (where it runs), from the call's own inputs,")


def _bypasses(stmt: ast.Assign, name: str, overwritten: ast.Assign) -> bool:
    """An overwrite under an ``if`` leaves the value to the path that skips it, unless it recomputes the name from
    the very inputs the call consumed (``q = rotary(q_rot, ...)`` then ``q = cat((q_rot, q_pass))``: the rotated
    result is bypassed where the overwrite runs)."""
    inputs = {n.id for arg in [*stmt.value.args, *(k.value for k in stmt.value.keywords)]  # type: ignore[attr-defined]
              for n in ast.walk(arg) if isinstance(n, ast.Name)} - {name}
    return bool(inputs & {n.id for n in ast.walk(overwritten.value) if isinstance(n, ast.Name)})


def _blocks(func: ast.AST):
    """Every statement list of the function, nested ones included, walking statements only (not expressions)."""
    pending = [func]
    while pending:
        node = pending.pop()
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], (ast.stmt, ast.excepthandler)):
                if isinstance(body[0], ast.stmt):
                    yield body
                pending.extend(stmt for stmt in body if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                              ast.ClassDef)))


def _next_store_unread(name: str, following: list[ast.stmt]) -> Optional[ast.Assign]:
    """The first later assignment to ``name`` (in these statements or nested in them) reached before any read of
    it, or None (a read comes first, or no store; loops and functions stop the search)."""
    for stmt in following:
        if isinstance(stmt, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                             ast.Try, ast.With)):
            return None
        for sub in _in_order(stmt):
            if isinstance(sub, ast.Name) and sub.id == name:
                if isinstance(sub.ctx, ast.Load):
                    return None
                owner = _assignment_of(stmt, sub)
                return owner
    return None


def _in_order(stmt: ast.stmt):
    """Names of a statement in evaluation order: an assignment's value before its targets; an if's test, then
    its body, then its else."""
    if isinstance(stmt, ast.Assign):
        yield from (n for n in ast.walk(stmt.value) if isinstance(n, ast.Name))
        yield from (n for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name))
    elif isinstance(stmt, ast.If):
        yield from (n for n in ast.walk(stmt.test) if isinstance(n, ast.Name))
        for inner in stmt.body:
            yield from _in_order(inner)
        for inner in stmt.orelse:
            yield from (n for n in ast.walk(inner) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    else:
        yield from (n for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))


def _assignment_of(stmt: ast.stmt, target: ast.Name) -> Optional[ast.Assign]:
    for node in ast.walk(stmt):
        if isinstance(node, ast.Assign) and any(target is n for t in node.targets for n in ast.walk(t)):
            return node
    return None


@on(ev.FunctionDone, reports=("SC130",))
def computed_unused(scope: Scope, e: ev.FunctionDone) -> None:
    _computed_unused(scope)
