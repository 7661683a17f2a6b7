"""Reshapes: heads split and merged in the right order (SC104, SC105, SC112), views of permuted memory
(SC106), keys reshaped with the query length (SC113)."""

from __future__ import annotations

import ast
from collections import Counter
from typing import Optional, Sequence

from shapecheck.vocabulary import AXES
from shapecheck.lint import events as ev
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.scope import Scope
from shapecheck.lint.tracking import (
    ONE, WILD, Dim, Label, Target, Tensor, groups, name_label, product, show, unique_index,
)
from shapecheck.lint.nodes import of_type, walk
from shapecheck.lint.ops import D_HEAD, HEADS, WIDTH

BATCH = Label(("batch",), "batch")
SEQ_Q, SEQ_K = Label(("seq_q",), "seq_q"), Label(("seq_k",), "seq_k")
_MIXING = frozenset({"batch", "heads"})  # axes whose mixing corrupts every example


@on(ev.Reshape)
def reshape_checks(scope: Scope, e: ev.Reshape) -> None:
    call, kind, t, target = e.call, e.kind, e.tensor, e.target
    if _key_query_shape(scope, call, kind):
        return
    if target is None:
        return
    src = t.axes
    if _key_length(scope, call, kind, src, target) or _under_size_one(scope, call):
        return
    if src is None:
        if t.projected:
            _split_projected(scope, call, kind, target)
        return
    for check in (_order, _merge, _split):
        if check(scope, call, kind, src, target):
            break
    if kind == "view":
        _contiguous(scope, call, t, src, target)

def _key_length(scope: Scope, call: ast.Call, kind: str, src: Optional[Sequence], target: list[Target]) -> bool:
    if SEQ_Q not in target or SEQ_K in target:
        return False
    by_axes = src is not None and unique_index(src, SEQ_K) is not None and SEQ_Q not in src
    by_name = any(nm.is_key_name(n) for n in _receiver_names(scope, call)) and _seq_k_name(scope) is not None \
        and _from_key_input(scope, call.func.value if isinstance(call.func, ast.Attribute) else None)
    if not (by_axes or by_name):
        return False
    q_text = _arg_text(call, target.index(SEQ_Q), "tgt_len")
    scope.report(msg.KeyQueryLength, call, q_text, kind, show(target), _seq_k_name(scope) or "src_len")
    return True

def _under_size_one(scope: Scope, call: ast.Call) -> bool:
    """The reshape runs only where an ``if`` has checked that an axis has size 1 (``attn.size(1) == 1``): moving
    a size-1 axis moves no data, so the order of the view is exact there (fairseq's ONNX single-step path)."""
    func = scope.func
    if func is None:
        return False
    key = f"under_size_one:{id(func.node)}"
    if key not in scope.memo:
        inside = set()
        for node in of_type(func.node, ast.If):
            if any(
                    isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                    and nm.int_value(test.comparators[0]) == 1 and _is_size(test.left) for test in ast.walk(node.test)):
                inside |= {id(sub) for stmt in node.body for sub in ast.walk(stmt)}
        scope.memo[key] = frozenset(inside)
    return id(call) in scope.memo[key]  # type: ignore[operator]


def _is_size(node: ast.expr) -> bool:
    """``x.size(i)``, ``x.size()[i]``, ``x.shape[i]``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size":
        return bool(node.args)
    return isinstance(node, ast.Subscript) and (
        isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
        or isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "size")


_KV_INPUTS = frozenset({"key_value_states", "encoder_hidden_states"})
# Methods that keep a tensor's length along the sequence: what they return is still the keys they got.
_LENGTH_KEEPING = frozenset({"view", "reshape", "transpose", "permute", "contiguous", "unsqueeze", "squeeze",
                             "flatten", "to", "float", "half", "type", "type_as", "chunk", "split"})


def _from_key_input(scope: Scope, node: Optional[ast.expr], depth: int = 0) -> bool:
    """Whether ``node`` is, by data flow, the keys/values a function was given: a parameter never cut or padded,
    a projection ``self.k_proj(x)``, or a length-keeping method chain of those. Keys cut or padded to the query
    length (``keys = keys[:, :L]``) or an attention output broadcast back to the queries are not."""
    func = scope.func
    if node is None or func is None or depth > 8:
        return False
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _LENGTH_KEEPING:
        node = node.func.value
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and not isinstance(node.slice, ast.Slice) \
            and not isinstance(node.slice, ast.Tuple):
        node = node.value  # one of a tuple of projections: ``kv[0]``
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.MatMult, ast.Mult)):
        return _from_key_input(scope, node.left, depth + 1)  # value @ w_v: a projection of the values
    if isinstance(node, ast.Call) and nm.self_attr(node.func) is not None and len(node.args) == 1:
        return not isinstance(node.args[0], ast.Name) or _from_key_input(scope, node.args[0], depth + 1)
    if not isinstance(node, ast.Name):
        return False
    sources = [a.value for a in walk(func.node) if isinstance(a, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == node.id for t in a.targets)]
    if not sources:
        return node.id in func.params
    def kept(value: ast.expr) -> bool:
        if _keeps_length(value) and _chain_root(value) == node.id:  # keys = keys.view(...).transpose(...)
            return node.id in func.params
        return _from_key_input(scope, value, depth + 1)

    return all(kept(v) for v in sources)


def _chain_root(node: ast.expr) -> Optional[str]:
    while isinstance(node, (ast.Call, ast.Attribute)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _keeps_length(node: ast.expr) -> bool:
    """``x.view(...).transpose(...)``: only length-keeping methods down to the name."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _LENGTH_KEEPING:
        node = node.func.value
    return isinstance(node, ast.Name)


def _key_query_shape(scope: Scope, call: ast.Call, kind: str) -> bool:
    """``self.k_proj(key_value_states).view(*input_shape, -1, d)`` (or ``.view(hidden_shape)``) where the shape
    is the query input's ``x.shape[:-1]``: keys and values take the query length in cross-attention."""
    func = scope.func
    if func is None or scope.following or not isinstance(call.func, ast.Attribute):
        return False
    source = _projected_input(call.func.value, _plain_aliases(scope, func.node))
    if source is None:
        return False
    shapes = _query_shapes(func.node, source)
    used = [a.value.id for a in call.args if isinstance(a, ast.Starred) and isinstance(a.value, ast.Name)]
    used += [a.id for a in call.args[:1] if len(call.args) == 1 and isinstance(a, ast.Name)]
    hit = next((shapes[n] for n in used if n in shapes), None)
    if hit is None:
        return False
    name, query = hit
    scope.report(msg.KeyQueryLength, call, f"{name} = {query}.shape[:-1]", kind, ", ".join(map(ast.unparse, call.args)),
                 f"{source}.shape[:-1]")
    return True


def _plain_aliases(scope: Scope, func: ast.AST) -> dict[str, str]:
    """Names assigned exactly once, straight from a key/value input (``current_states = key_value_states``)."""
    key = f"kv_aliases:{id(func)}"
    if key not in scope.memo:
        stores = Counter(n.id for n in of_type(func, ast.Name) if isinstance(n.ctx, ast.Store))
        found = {n: n for n in _KV_INPUTS if stores[n] == 0}
        for node in of_type(func, ast.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Name) and node.value.id in found \
                    and stores[node.targets[0].id] == 1:
                found[node.targets[0].id] = node.value.id
        scope.memo[key] = found
    return scope.memo[key]  # type: ignore[return-value]


def _projected_input(node: ast.expr, aliases: dict[str, str]) -> Optional[str]:
    """The key/value input of ``self.k_proj(x)`` (a projection called on one name), else None."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords \
            and nm.self_attr(node.func) is not None and isinstance(node.args[0], ast.Name):
        return aliases.get(node.args[0].id)
    return None


def _query_shapes(func: ast.AST, source: str) -> dict[str, tuple[str, str]]:
    """Shape names made of another input's ``x.shape[:-1]`` / ``x.size()[:-1]``, each assigned once:
    ``input_shape = x.shape[:-1]`` and ``hidden_shape = (*input_shape, -1, d)`` -> (input_shape, x)."""
    stores = Counter(n.id for n in of_type(func, ast.Name) if isinstance(n.ctx, ast.Store))
    found: dict[str, tuple[str, str]] = {}
    assigns = [n for n in of_type(func, ast.Assign) if len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and stores[n.targets[0].id] == 1]
    for node in assigns:
        v = node.value
        if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Slice) and v.slice.lower is None \
                and v.slice.step is None and ast.unparse(v.slice.upper or ast.Constant(0)) == "-1":
            base = v.value
            if isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and base.func.attr == "size" \
                    and not base.args:
                base = base.func.value
            elif isinstance(base, ast.Attribute) and base.attr == "shape":
                base = base.value
            else:
                continue
            if isinstance(base, ast.Name) and base.id != source and base.id not in _KV_INPUTS:
                found[node.targets[0].id] = (node.targets[0].id, base.id)
    for node in assigns:
        v = node.value
        if isinstance(v, ast.Tuple) and v.elts and isinstance(v.elts[0], ast.Starred) \
                and isinstance(v.elts[0].value, ast.Name) and v.elts[0].value.id in found:
            found[node.targets[0].id] = found[v.elts[0].value.id]
    return found


def _receiver_names(scope: Scope, call: ast.Call) -> list[str]:
    """The names assigned to, and the names along the receiver's chain (``self.k_proj(x).view`` -> k_proj)."""
    found = list(scope.targets)
    node = call.func.value if isinstance(call.func, ast.Attribute) else None
    while node is not None:
        if isinstance(node, ast.Name):
            found.append(node.id)
            break
        attr = nm.self_attr(node)
        if attr is not None:
            found.append(attr)
            break
        node = node.func if isinstance(node, ast.Call) else getattr(node, "value", None) \
            if isinstance(node, (ast.Attribute, ast.Subscript)) else None
    return found

def _seq_k_name(scope: Scope) -> Optional[str]:
    for name, value in scope.env.items():
        if isinstance(value, Dim) and value.label == SEQ_K:
            return name
        if isinstance(value, Tensor) and value.param and name_label(name) == SEQ_K:
            return name
    return None

def _order(scope: Scope, call: ast.Call, kind: str, src: Sequence, target: list[Target]) -> bool:
    pairs = []
    for j, label in enumerate(target):
        if isinstance(label, Label) and label.atoms and not all(a.isdigit() for a in label.atoms):
            i = unique_index(src, label)
            if i is None and unique_index(target, label) == j:
                i = _split_from(src, label)
            if i is not None and unique_index(target, label) == j:
                pairs.append((j, i, label))
    for (_, i1, first), (_, i2, second) in zip(pairs, pairs[1:]):
        texts = {first.text, second.text}
        if i1 > i2 and _MIXING & texts and all(t in AXES or "*" in t for t in texts):  # a product of sizes too
            scope.report(msg.ReshapeOrder, call, kind, show(target), show(src), first.text, second.text)
            return True
    return False

def _split_from(src: Sequence, label: Label) -> Optional[int]:
    """The one leading source axis that ``label`` is split out of (``heads`` of a ``batch*heads`` axis); heads
    split out of the last axis, the width, are the split rule's (SC105)."""
    need = Counter(label.atoms)
    hits = [i for i, axis in enumerate(src[:-1]) if axis is not None and len(axis.atoms) > len(label.atoms)
            and not need - Counter(axis.atoms)]
    return hits[0] if len(hits) == 1 else None


def _per_head(src: Sequence, target: list[Target]) -> tuple[Sequence, list[Target]]:
    """A source axis that is a size divided by the heads (``c // heads``) is one head's size, whatever it is called,
    and a target axis of that size (``c``) is the heads and the head size merged: both renamed so."""
    quotients = [i for i, axis in enumerate(src) if axis is not None and "/heads" in axis.atoms]
    if len(quotients) != 1 or unique_index(src, HEADS) is None or unique_index(src, D_HEAD) is not None:
        return src, target
    whole = tuple(sorted(a for a in src[quotients[0]].atoms if a != "/heads"))
    src = [D_HEAD if i == quotients[0] else axis for i, axis in enumerate(src)]
    if WIDTH not in target:  # a size the names already call the width keeps it (Timesformer's seq is hidden_size)
        target = [WIDTH if isinstance(t, Label) and tuple(sorted(t.atoms)) == whole else t for t in target]
    return src, target


def _merge(scope: Scope, call: ast.Call, kind: str, src: Sequence, target: list[Target]) -> bool:
    src, target = _per_head(src, target)
    if _heads_across_batch(scope, call, kind, src, target):
        return True
    if _heads_skipped(src, target):
        scope.report(msg.MergeWithoutTranspose, call, kind, show(target), show(src))
        return True
    ph, pd = unique_index(src, HEADS), unique_index(src, D_HEAD)
    if ph is not None and pd is None and src[-1] is None and ph < len(src) - 2 and len(target) == len(src) - 1 \
            and isinstance(target[-1], Label) and "heads" in target[-1].atoms and HEADS not in target:
        # the head size unnamed, last: the target's last axis merges it with heads that lie apart
        scope.report(msg.MergeWithoutTranspose, call, kind, show(target), show(src))
        return True
    if ph is None or pd is None or abs(pd - ph) == 1:  # adjacent (d_head-major is a channel order, not a mix)
        return False
    if HEADS in target or D_HEAD in target:
        return False
    lo, hi = min(ph, pd), max(ph, pd)
    between = Counter(a for axis in src[lo + 1:hi] if axis is not None for a in axis.atoms)
    for label in target:
        atoms = Counter(label.atoms) if isinstance(label, Label) else Counter()
        if atoms["heads"] < 1 or atoms["d_head"] < 1:
            continue
        unnamed = any(axis is None for axis in src[lo + 1:hi])
        exactly_two = atoms == Counter({"heads": 1, "d_head": 1}) and len(target) == len(src) - 1
        if pd > ph and not between - atoms and not (unnamed and exactly_two):
            continue  # the merged axis also takes the axes in between: a flatten
        scope.report(msg.MergeWithoutTranspose, call, kind, show(target), show(src))
        return True
    return False


def _heads_across_batch(scope: Scope, call: ast.Call, kind: str, src: Sequence, target: list[Target]) -> bool:
    """``[heads, batch, seq, d_head]`` viewed as ``(batch, seq, heads * d_head)``: the merge carries the heads
    across the batch axis, so every row takes its features from other examples whatever the lengths (SC112). Not
    where a transpose or permute makes that order in the same expression (``o.transpose(0, 1).reshape(b, q, -1)``):
    on a decode path of one sequence it moves an axis of size 1 (SC104's, opt-in); nor a merge across the
    positions alone (SC104 too)."""
    ph, pd, pb = unique_index(src, HEADS), unique_index(src, D_HEAD), unique_index(src, BATCH)
    if ph is None or pd is None or pb is None or not ph < pb < pd or HEADS in target or BATCH not in target:
        return False
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("transpose", "permute")
           for n in walk(receiver) if receiver is not None):
        return False
    if not any(isinstance(t, Label) and Counter(t.atoms)["heads"] and Counter(t.atoms)["d_head"] for t in target):
        return False
    scope.report(msg.ReshapeOrder, call, kind, show(target), show(src), "batch", "heads")
    return True


def _heads_skipped(src: Sequence, target: list[Target]) -> bool:
    """``(B, heads, N, ?)`` viewed as ``(B, N, ?)``: two neighbouring target axes are source axes on either side
    of the heads, so the heads' data lands in a later axis, mixed with the positions (whatever the head size is)."""
    ph = unique_index(src, HEADS)
    if ph is None or HEADS in target:
        return False
    found = []
    for j, label in enumerate(target):
        if isinstance(label, Label) and label.atoms and not any(a.isdigit() for a in label.atoms) \
                and unique_index(target, label) == j:
            i = unique_index(src, label)
            found.append((j, i if i is not None else _split_from(src, label)))  # H of an H*W axis
    return any(i1 is not None and i2 is not None and j2 == j1 + 1 and i1 < ph < i2
               for (j1, i1), (j2, i2) in zip(found, found[1:]))


def _split(scope: Scope, call: ast.Call, kind: str, src: Sequence, target: list[Target]) -> bool:
    last = src[-1] if src else None
    heads = _split_of(last, target)
    if last is not None and heads is None:
        return False  # a known last axis must be the width that the target splits
    heads = heads or (HEADS, D_HEAD)
    for axis in src[:-1]:
        if axis is None or set(a for h in heads for a in h.atoms) & set(axis.atoms):
            return False  # heads may come from another axis (batch*heads), or an axis has no name
    placed = [j for j, label in enumerate(target) if label in heads or isinstance(label, Label)
              and heads[0].atoms and not Counter(heads[0].atoms) - Counter(label.atoms)]  # 2 * heads (two maps)
    if not placed or list(target[:placed[0]]) != list(src[:placed[0]]):
        return False  # the axes before the heads must be the source's own, so the heads come from the width
    if any(isinstance(label, Label) and "batch" in label.atoms and len(label.atoms) > 1
           for label in target[:placed[0] + 1]):
        return False  # heads merged into the batch (``reshape(b * h, ...)``): they were an axis already
    p = placed[0]
    if len(src) == p + 2 and len(target) == p + 3 and target[p] == heads[0] and target[p + 1] is WILD \
            and target[p + 2] == heads[1]:  # view(B, heads, -1, d_head) of (B, T, width): the -1 is T
        scope.report(msg.SplitWithoutTranspose, call, kind, show(target), show(src), src[p].text)
        return True
    for j, label in enumerate(target):
        if not isinstance(label, Label) or not label.atoms or j < placed[0]:
            continue
        i = unique_index(src, label)
        if i is not None and i < len(src) - 1 and unique_index(target, label) == j:
            scope.report(msg.SplitWithoutTranspose, call, kind, show(target), show(src), label.text)
            return True
    return False

def _split_projected(scope: Scope, call: ast.Call, kind: str, target: list[Target]) -> None:
    """``proj(x).view(B, heads, -1, d_head)``: a projection's features are its last axis, so heads split
    from them cannot come before the positions (whatever the input's rank)."""
    if len(target) != 4 or target[0] != BATCH or target[1] != HEADS or target[3] != D_HEAD:
        return
    seq = target[2]
    if not (seq is WILD or isinstance(seq, Label) and seq.atoms and not {"batch", "heads", "d_head"} & set(seq.atoms)
            and not all(a.isdigit() for a in seq.atoms)):
        return
    scope.report(msg.SplitWithoutTranspose, call, kind, show(target), "batch, ..., d_model",
                 "seq" if seq is WILD else seq.text)  # type: ignore[union-attr]


def _split_of(width: Optional[Label], target: list[Target]) -> Optional[tuple[Label, Label]]:
    """(the head count, the head size): heads and d_head, or two target axes whose product is ``width``
    (the head count is what splits the width, whatever its name)."""
    if width is None:
        return None
    if {"heads", "d_head"} <= set(width.atoms):
        return HEADS, D_HEAD
    labels = [t for t in target if isinstance(t, Label) and t.atoms]
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            if a != width and b != width and product(a, b) == width:
                return a, b
    return None


def _contiguous(scope: Scope, call: ast.Call, t: Tensor, src: Sequence, target: list[Target]) -> None:
    order = t.order
    if order is None or list(order) == sorted(order) or len(order) != len(src):
        return
    found = groups(src, target)
    if found is None:
        return
    sized = [k for k, axis in enumerate(src) if axis != ONE]  # an axis of size 1 has no place in memory
    rank = {k: r for r, k in enumerate(sorted(sized, key=lambda k: order[k]))}
    for start, end in found:
        kept = [k for k in range(start, end) if k in rank]
        if any(rank[b] != rank[a] + 1 for a, b in zip(kept, kept[1:])):
            scope.report(msg.ViewNotContiguous, call, show(target), show(src))
            return


def _arg_text(call: ast.Call, index: int, default: str) -> str:
    plain = call.args
    if len(plain) == 1 and isinstance(plain[0], (ast.Tuple, ast.List)):
        plain = plain[0].elts
    if index < len(plain) and not any(isinstance(a, ast.Starred) for a in plain):
        return ast.unparse(plain[index])
    return default

