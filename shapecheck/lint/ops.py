"""What shape-changing operations do to tracked axes: einsum and einops patterns, indexing, unbind, cat,
flatten/unflatten, movedim, and the ``-1`` of a view. Pure functions over ``tracking`` values; an axis
they cannot name is ``None`` and the rules stay silent about it."""

from __future__ import annotations

import ast
import re
from collections import Counter
from typing import Optional, Sequence

from shapecheck.lint.tracking import ONE, WILD, Axis, Label, Target, Tensor, cancel_atoms, fresh, matmul_scale, quotient

HEADS, D_HEAD = Label(("heads",), "heads"), Label(("d_head",), "d_head")
WIDTH = Label(("d_head", "heads"), "d_model")  # what the head count splits
_EINOPS_TOKEN = re.compile(r"\(|\)|\.\.\.|[A-Za-z_][A-Za-z0-9_]*|\d+")


def resolve_wild(src: Optional[Sequence[Axis]], target: list[Target]) -> list[Target]:
    """``view(B, T, -1)``: the ``-1`` is whatever the source has left over, when every size is named;
    ``view(B, T, 3, heads, -1)`` of a (B, T, width) source splits the last axis, and the ``-1`` after the heads is
    the size of one head, as is a size after the heads that its name calls the width (``view(B, N, 3, heads,
    self.in_dim)``: by where it stands, ``in_dim`` is one head's size, whatever it is called)."""
    if src is not None and len(target) > len(src) and len(target) >= 2 and target[-2] == HEADS \
            and isinstance(target[-1], Label) and sorted(target[-1].atoms) == sorted(WIDTH.atoms):
        target = target[:-1] + [D_HEAD]
    if src is not None and target.count(WILD) == 1 and target[-1] is WILD and len(target) > len(src) \
            and len(target) >= 2 and target[-2] == HEADS and (src[-1] is None or "heads" not in src[-1].atoms) \
            and all(isinstance(a, Label) and a == t for a, t in zip(src[:-1], target)):
        return target[:-1] + [D_HEAD]
    if src is None or target.count(WILD) != 1 or any(a is None for a in src):
        return target
    if not all(isinstance(t, Label) or t is WILD for t in target):
        return target
    rest = Counter(a for axis in src for a in axis.atoms)  # type: ignore[union-attr]
    rest.subtract(a for t in target if isinstance(t, Label) for a in t.atoms)
    over = [a for a, n in rest.items() for _ in range(-n)]  # sizes the target has and the source lacks
    if not +rest or any(a.startswith("/") for a in over):
        return target
    # view(-1, windows, h, N, N) of (B_, h, N, N): the -1 is B_ divided by the windows, B_·/windows
    atoms = cancel_atoms([*(+rest).elements(), *("/" + a for a in over)])
    text = "d_model" if atoms == ("d_head", "heads") else "*".join(atoms)
    return [Label(atoms, text) if t is WILD else t for t in target]


def einsum(equation: str, operands: Sequence[Optional[Tensor]]) -> Tensor:
    """``torch.einsum("bhid,bhjd->bhij", q, k)``: the output's axes; Q·Kᵀ when the contracted letter is
    the last axis of both operands (the scores, keys on the output letter only the second has). A leading
    ``...`` on every side stands for the operands' leading axes (named when every operand's rank is known)."""
    eq = equation.replace(" ", "")
    if "->" not in eq:
        return Tensor(scale="unknown")
    left, out = eq.split("->")
    inputs = left.split(",")
    if len(inputs) != len(operands):
        return Tensor(scale="unknown")
    lead: Optional[tuple[Axis, ...]] = ()
    if "." in eq:
        specs = inputs + [out]
        if any(not side.startswith("...") or "." in side[3:] for side in specs):
            return Tensor(scale="unknown")
        inputs, out = [side[3:] for side in inputs], out[3:]
        lead = _ellipsis_axes(inputs, operands)
    letters: dict[str, Axis] = {}
    for spec, t in zip(inputs, operands):
        trailing = t.axes[len(t.axes) - len(spec):] if t is not None and t.axes is not None \
            and len(t.axes) >= len(spec) and (lead or len(t.axes) == len(spec)) else None
        for i, ch in enumerate(spec):
            known = trailing[i] if trailing is not None else None
            if known is not None and letters.get(ch) is None:
                letters[ch] = known
    axes = None if lead is None else lead + tuple(letters.get(ch) for ch in out)
    tensors = [t if t is not None else Tensor(scale="unknown") for t in operands]
    scale, scale_at = matmul_scale(tensors)
    fields: dict = {"scale": scale, "scale_at": scale_at}
    if len(inputs) == 2:
        a, b = inputs
        summed = [ch for ch in a if ch in b and ch not in out]
        keys = [ch for ch in out if ch in b and ch not in a]
        if len(summed) == 1 and a and b and a[-1] == b[-1] == summed[0] and len(keys) == 1:
            at = out.index(keys[0])
            fields.update(role="scores", key_pos=at - len(out) if lead is None else len(lead) + at,
                          contracted=letters.get(summed[0]))
    if axes is None:
        return Tensor(min_rank=len(out) or None, **fields)
    return Tensor(axes=axes, order=None, **fields)


def contracts_features(equation: str) -> bool:
    """Whether a two-operand einsum sums the first operand's last axis away against the second's last
    (``...nd,...d->...n``): a dot product over the features."""
    eq = equation.replace(" ", "").replace("...", "")
    if "->" not in eq or eq.count(",") != 1:
        return False
    left, out = eq.split("->")
    a, b = left.split(",")
    return bool(a) and bool(b) and a[-1] == b[-1] and a[-1] not in out


def _ellipsis_axes(inputs: list[str], operands: Sequence[Optional[Tensor]]) -> Optional[tuple[Axis, ...]]:
    """The axes ``...`` stands for: the longest operand's leading ones; None when a rank is unknown."""
    found: tuple[Axis, ...] = ()
    for spec, t in zip(inputs, operands):
        if t is None or t.axes is None or len(t.axes) < len(spec):
            return None
        extra = t.axes[:len(t.axes) - len(spec)]
        if len(extra) > len(found):
            found = extra
    return found


def einops(pattern: str, t: Optional[Tensor], sizes: dict[str, Optional[Label]]) -> Tensor:
    """``rearrange``/``repeat``/``reduce`` with ``pattern`` and named sizes (``h=self.heads``)."""
    parsed = _einops_sides(pattern)
    if parsed is None:
        return Tensor(scale="unknown")
    src, dst = parsed
    letters: dict[str, Axis] = dict(sizes)
    if t is not None and t.axes is not None and len(t.axes) == len(src):
        for group, axis in zip(src, t.axes):
            _name_group(group, axis, letters)
    axes = tuple(_group_label(g, letters) for g in dst)
    scale = t.scale if t is not None else "unknown"
    return Tensor(axes=axes, order=None, scale=scale)


def _einops_sides(pattern: str) -> Optional[tuple[list[list[str]], list[list[str]]]]:
    if pattern.count("->") != 1 or "..." in pattern:
        return None
    sides = []
    for side in pattern.split("->"):
        groups: list[list[str]] = []
        current: Optional[list[str]] = None
        for token in _EINOPS_TOKEN.findall(side):
            if token == "(":
                current = []
            elif token == ")":
                if current is None:
                    return None
                groups.append(current)
                current = None
            elif current is not None:
                current.append(token)
            else:
                groups.append([token])
        sides.append(groups)
    return sides[0], sides[1]


def _name_group(group: list[str], axis: Axis, letters: dict[str, Axis]) -> None:
    if axis is None:
        return
    unknown = [g for g in group if letters.get(g) is None and not g.isdigit()]
    if len(unknown) != 1:
        return
    rest: Axis = axis
    for g in group:
        if g != unknown[0]:
            rest = quotient(rest, letters.get(g) if not g.isdigit() else _int(g))
    letters[unknown[0]] = rest


def _group_label(group: list[str], letters: dict[str, Axis]) -> Axis:
    return product_of([_int(g) if g.isdigit() else letters.get(g) for g in group])


def product_of(labels: Sequence[Axis]) -> Axis:
    """One axis made of several (a merge); None when any of them is unnamed."""
    if any(a is None for a in labels):
        return None
    if len(labels) == 1:
        return labels[0]
    atoms = tuple(sorted(a for label in labels for a in label.atoms))  # type: ignore[union-attr]
    text = "d_model" if atoms == ("d_head", "heads") else "*".join(l.text for l in labels if l.atoms)  # type: ignore[union-attr]
    return Label(atoms, text or "1")


def _int(text: str) -> Label:
    return ONE if text == "1" else Label((text,), text)


def index(t: Tensor, index: ast.expr) -> Tensor:
    """``x[i]``, ``x[:, :, :n]``, ``x[..., 0]``: integers drop axes, slices keep them (unnamed when cut)."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    unknown = Tensor(scale=t.scale, scale_at=t.scale_at)
    if t.axes is None:
        return unknown
    if any(isinstance(p, ast.Constant) and p.value is Ellipsis for p in parts):
        if sum(isinstance(p, ast.Constant) and p.value is Ellipsis for p in parts) > 1:
            return unknown
        at = next(i for i, p in enumerate(parts) if isinstance(p, ast.Constant) and p.value is Ellipsis)
        fill = len(t.axes) - (len(parts) - 1)
        if fill < 0:
            return unknown
        parts = [*parts[:at], *[ast.Slice() for _ in range(fill)], *parts[at + 1:]]
    if len(parts) > len(t.axes):
        return unknown
    axes: list[Axis] = []
    for k, axis in enumerate(t.axes):
        part = parts[k] if k < len(parts) else ast.Slice()
        if _int_index(part):
            continue
        if not isinstance(part, ast.Slice):
            return unknown  # a tensor index, None (a new axis), a name...
        whole = part.lower is None and part.upper is None and part.step is None
        axes.append(axis if whole else None)
    return Tensor(axes=tuple(axes), order=None, scale=t.scale, scale_at=t.scale_at, role=None)


def first_axis_item(t: Tensor) -> Tensor:
    """One item of iterating ``t`` (``a, b = t``): its first axis dropped, memory order and scaling kept."""
    if t.axes is None or len(t.axes) < 2:
        return Tensor(scale=t.scale, scale_at=t.scale_at)
    order = None
    if t.order is not None:
        rest = t.order[1:]
        order = tuple(sorted(rest).index(r) for r in rest)
    return Tensor(axes=t.axes[1:], order=order, scale=t.scale, scale_at=t.scale_at)


def _int_index(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int or (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int)


def drop_axis(t: Tensor, dim: int) -> Tensor:
    """``x[i]`` / ``x.unbind(dim)`` / ``x.select(dim, i)``: the axis is gone."""
    if t.axes is None or not -len(t.axes) <= dim < len(t.axes):
        return Tensor(scale=t.scale, scale_at=t.scale_at)
    axes = list(t.axes)
    del axes[dim % len(axes)]
    return fresh(axes, scale=t.scale, scale_at=t.scale_at)


def cat(pieces: Sequence[object], dim: int) -> Tensor:
    """``torch.cat(pieces, dim)``: the other axes as the pieces of known axes agree (cat needs them equal in
    size), the joined one unnamed. Scores joined with extra key columns (attention sinks), or the score rows
    of other queries, stay the scores."""
    first = pieces[0] if pieces and isinstance(pieces[0], Tensor) else Tensor()
    rank = first.rank
    on_keys = first.role == "scores" and first.key_pos is not None and (
        first.key_pos == dim if rank is None else -rank <= dim < rank and first.key_pos % rank == dim % rank)
    # score rows of query groups stacked (LUKE's word and entity queries) are the scores too
    on_queries = first.key_pos is not None and all(isinstance(p, Tensor) and p.role == "scores" for p in pieces) and (
        first.key_pos - 1 == dim if rank is None else -rank <= dim < rank and (first.key_pos - 1) % rank == dim % rank)
    keys = {"role": "scores", "key_pos": first.key_pos} if on_keys or on_queries else {}
    known = [p for p in pieces if isinstance(p, Tensor) and p.axes is not None]
    if not known or len({p.rank for p in known}) != 1 or not -len(known[0].axes) <= dim < len(known[0].axes):  # type: ignore[arg-type]
        # projections joined along the positions (joint text-image attention) keep their features last
        features = dim != -1 and all(isinstance(p, Tensor) and p.projected for p in pieces)
        return Tensor(scale=first.scale, scale_at=first.scale_at, min_rank=first.min_rank, projected=features,
                      **keys)  # type: ignore[arg-type]
    axes = [a if all(p.axes[i] == a for p in known) else None  # type: ignore[index]
            for i, a in enumerate(known[0].axes)]  # type: ignore[arg-type]
    axes[dim % len(axes)] = None
    return fresh(axes, scale=first.scale, scale_at=first.scale_at, **keys)


def flatten(t: Tensor, start: int, end: int) -> Tensor:
    if t.axes is None:
        return Tensor(scale=t.scale)
    n = len(t.axes)
    if not (-n <= start < n and -n <= end < n):
        return Tensor(scale=t.scale)
    s, e = start % n, end % n
    merged = product_of(t.axes[s:e + 1])
    return fresh(t.axes[:s] + (merged,) + t.axes[e + 1:], scale=t.scale, scale_at=t.scale_at)


def movedim(t: Tensor, source: int, destination: int) -> Optional[list[int]]:
    """The permutation ``movedim`` makes, for ``tracking.permute``; None when the rank is unknown."""
    if t.axes is None:
        return None
    n = len(t.axes)
    if not (-n <= source < n and -n <= destination < n):
        return None
    order = [i for i in range(n) if i != source % n]
    order.insert(destination % n, source % n)
    return order
