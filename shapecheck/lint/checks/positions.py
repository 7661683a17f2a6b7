"""A rotary table sliced from position 0 by the new tokens' length where a cache puts them further on (SC155).

With a key/value cache the new queries and keys sit at positions ``start_pos ... start_pos + seqlen - 1``; a
precomputed table (``freqs_cis``, ``cos``/``sin``) must be sliced there (``freqs[start_pos:start_pos + seqlen]``).
``freqs[:seqlen]`` rotates them as if they were the first tokens. The rule reads only functions that hold a cache or a
position offset (a parameter such as ``start_pos``/``input_pos``/``offset``, or a cache parameter), and a slice in a
branch that tests them the other way (``if start_pos == 0``, ``if past is None``) is left alone.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.checks.cache import _cached_keys
from shapecheck.lint.scope import Scope
from shapecheck.lint.nodes import other_branch, subtree
from shapecheck.lint.tracking import Dim

_OFFSET = re.compile(r"^(start_pos|input_pos|start_position|offset|seqlen_offset|pos_offset|position_offset|"
                     r"cache_offset|past_len|past_length|past_key_values_length|cache_position)$")
_CACHE = re.compile(r"past|cache|layer_past", re.I)
_TABLE = re.compile(r"cos|sin|freq|rope|rotary|pos_emb|position_emb", re.I)
_SLICED = re.compile(r"(?i)(cos|sin|freq|rope|rotary|pos_emb|position_emb)\w*\s*\[\s*:")
_SLICE_FROM_START = re.compile(r"\[\s*:")  # what _SLICED ends with, found far faster: asked first
_FROM_ZERO = re.compile(r"arange\(\s*(0\s*,\s*)?[\w.]+\s*(\)|,\s*(device|dtype)\b)")  # arange(T), arange(0, T)
_ROTARY_WORD = re.compile(r"(?i)rotary|\brope|freq")
_POSITIONS = re.compile(r"pos|position", re.I)


def _bound(node: ast.expr) -> Optional[ast.expr]:
    """``n`` of ``t[:n]`` or ``t[:n, ...]`` (a slice of the first axis from 0, no step); None otherwise."""
    first = node.elts[0] if isinstance(node, ast.Tuple) and node.elts else node
    if isinstance(first, ast.Slice) and first.lower is None and first.upper is not None and first.step is None:
        return first.upper
    return None


def _length(scope: Scope, bound: ast.expr, grown: set[str]) -> bool:
    """A length read from a tensor's shape and never grown by a past length: ``T`` of ``B, T, C = x.shape``,
    ``seqlen``, ``x.shape[1]``, ``x.size(1)``."""
    if isinstance(bound, ast.Name):
        return bound.id not in grown and isinstance(scope.env.get(bound.id), Dim)
    if isinstance(bound, ast.Subscript) and isinstance(bound.value, ast.Attribute) and bound.value.attr == "shape":
        return True
    return isinstance(bound, ast.Call) and isinstance(bound.func, ast.Attribute) and bound.func.attr == "size" \
        and len(bound.args) == 1


def _cache_test(test: ast.expr, offsets: set[str]) -> Optional[bool]:
    """True when the test holds where a cache is in use (``if self.use_kv_cache``, ``if past is not None``), False
    for any other test of the cache or the offset (``if start_pos == 0``, ``if past is None``), None otherwise."""
    if isinstance(test, (ast.Name, ast.Attribute)) and _CACHE.search(ast.unparse(test)):
        return True
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None \
            and _CACHE.search(ast.unparse(test.left)):
        return True
    words = set(nm.identifiers(test))
    if words & offsets or any(_CACHE.search(w) for w in words):
        return False
    return None


@on(ev.FunctionDone)
def rotary_without_offset(scope: Scope, e: ev.FunctionDone) -> None:
    func = scope.func
    if func is None or scope.following or scope.memo.get(f"rotary_offset:{id(e.node)}"):
        return
    scope.memo[f"rotary_offset:{id(e.node)}"] = True
    offsets = {p for p in func.params if _OFFSET.match(p)}
    caches = {p for p in func.params if _CACHE.search(p) and not _TABLE.search(p)}  # ``rope_cache`` is the table
    if not offsets and not caches:
        return  # no cache and no offset given to the function: nothing to read (the common case costs no walk)
    source = scope.source_text()
    if source is not None:
        text, starts = source
        span = (starts[e.node.lineno - 1], starts[min(e.node.end_lineno or e.node.lineno, len(starts) - 1)])
        sliced = _SLICE_FROM_START.search(text, *span) and _SLICED.search(text, *span)
        if not sliced and not (_FROM_ZERO.search(text, *span) and _ROTARY_WORD.search(text, *span)):
            return  # no table sliced from 0, no positions from 0 beside a rotary embedding: far cheaper than a walk
    grown, shifted, parents, sources = set(), set(), {}, {}
    cached = _cached_keys(scope)
    for node in ast.walk(e.node):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
        if isinstance(node, ast.Assign):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        sources.setdefault(n.id, set()).update(nm.identifiers(node.value))
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            grown.add(node.target.id)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.BinOp):
            grown |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript) and not _bound(node.value.slice) \
                and isinstance(node.value.slice, (ast.Slice, ast.Tuple)):
            shifted |= {t.id for t in node.targets if isinstance(t, ast.Name)}  # ``freqs = freqs[start_pos:]``
    for node in ast.walk(e.node):
        if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
            continue
        table = node.value
        shown = table.id if isinstance(table, ast.Name) else table.attr if isinstance(table, ast.Attribute) else None
        bound = _bound(node.slice)
        if shown is None or bound is None or not _TABLE.search(shown) or shown in shifted \
                or not _length(scope, bound, grown):
            continue
        read = sources.get(bound.id, set()) if isinstance(bound, ast.Name) else set(nm.identifiers(bound))
        if read & cached:
            continue  # the length of keys that already hold the cache: the whole table up to them is right
        if _in_use(node, parents, e.node, offsets | caches):
            scope.report(msg.RotaryWithoutOffset, node, ast.unparse(node), _where(offsets, caches),
                         f"{ast.unparse(table)}[offset:offset + {ast.unparse(bound)}]")
    for node, bound in _from_zero(e.node, scope, grown, sources, cached):
        if _in_use(node, parents, e.node, offsets | caches):
            scope.report(msg.RotaryWithoutOffset, node, ast.unparse(node), _where(offsets, caches),
                         f"torch.arange(offset, offset + {ast.unparse(bound)})")


def _where(offsets: set[str], caches: set[str]) -> str:
    return ", ".join(sorted(offsets)) if offsets else ", ".join(sorted(caches))


def _in_use(node: ast.AST, parents: dict, top: ast.AST, names: set[str]) -> bool:
    """Whether the cache may be in use where ``node`` runs: not in a branch that tests it (or the offset) the other
    way, nor in one whose other branch reads them (``if self.training: table[:T] else: table[input_pos]``: the
    code tells the two cases apart, whatever it tests); inside ``if past is not None:`` it certainly is."""
    child, parent = node, parents.get(id(node))
    while parent is not None and parent is not top:
        if isinstance(parent, ast.If) and child is not parent.test:
            said = _cache_test(parent.test, names)
            if said is not None:
                return said and child in parent.body
            if any(isinstance(n, ast.Name) and n.id in names
                   for s in other_branch(parent, child) for n in subtree(s)):
                return False
        child, parent = parent, parents.get(id(parent))
    return True


def _from_zero(func: ast.AST, scope: Scope, grown: set[str], sources: dict, cached: frozenset) -> list:
    """``positions = torch.arange(T)`` (or ``arange(0, T)``) of the new tokens' length, given to a rotary embedding
    or used to index a rotary table: (the arange call, its length)."""
    made: dict[str, tuple[ast.Call, ast.expr]] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and (nm.dotted(node.value.func) or "").endswith("arange"):
            args = node.value.args
            bound = args[0] if len(args) == 1 else args[1] if len(args) == 2 and nm.int_value(args[0]) == 0 else None
            if bound is not None and _length(scope, bound, grown) and not (
                    (sources.get(bound.id, set()) if isinstance(bound, ast.Name) else set()) & cached):
                made[node.targets[0].id] = (node.value, bound)
    found = []
    for node in ast.walk(func):
        used = None
        if isinstance(node, ast.Call) and _TABLE.search(nm.dotted(node.func) or getattr(node.func, "attr", "") or ""):
            used = [a.id for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Name)]
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and _TABLE.search(
                ast.unparse(node.value)):
            used = [node.slice.id]
        for name in used or ():
            if name in made and _POSITIONS.search(name) or name in made and isinstance(node, ast.Subscript):
                found.append(made.pop(name))
    return found
