"""Named-axis tracking: abstract tensors whose axes carry names from ``shapecheck.vocabulary``.

A label is a product of atoms: ``d_model`` is ``heads·d_head``, ``C // n_head`` is
``d_head``, a literal ``1`` is the empty product. ``None`` is an axis nobody named;
every rule stays silent where it would have to read one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence, TypeVar, Union

from shapecheck.vocabulary import canonical

PER_HEAD = ("d_head", "d_k", "d_v")
# Names the vocabulary does not list, with the product they stand for.
EXTRA = {"all_head_size": "d_model", "inner_dim": "d_model", "src_len": "seq_k", "tgt_len": "seq_q",
         "attention_head_dim": "d_head", "dim_head": "d_head", "d_kv": "d_head"}


@dataclass(frozen=True)
class Label:
    """An axis name: ``atoms`` (sorted) decide equality, ``text`` is what messages show."""

    atoms: tuple[str, ...]
    text: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Label) and other.atoms == self.atoms

    def __hash__(self) -> int:
        return hash(self.atoms)


class _Wild:
    """The ``-1`` of a view: whatever is left."""

    def __repr__(self) -> str:
        return "-1"


WILD = _Wild()
Axis = Optional[Label]
Target = Union[Label, None, _Wild]


def name_label(name: str) -> Label:
    """The label of an identifier: its vocabulary name, expanded into atoms."""
    axis = canonical(EXTRA.get(name, name))
    if axis == "d_model":
        return Label(("d_head", "heads"), axis)
    return Label(("d_head",) if axis in PER_HEAD else (axis,), axis)


def per_head_label(labels: Sequence[Axis]) -> Optional[Label]:
    """The last axis of a tensor whose earlier axes include the heads holds one head's features, whatever its
    size is called (``b, heads, dim = q.shape``): d_head's label where the name gave none or the width's."""
    if len(labels) < 2 or not any(isinstance(a, Label) and a.atoms == ("heads",) for a in labels[:-1]):
        return None
    last = labels[-1]
    return name_label("d_head") if last is None or isinstance(last, Label) and last.text == "d_model" else None


def height_label(names: Sequence[Optional[str]], k: int) -> Optional[Label]:
    """In a row of names (an unpacked shape ``N, C, h, w = x.shape``, a function's parameters ``d, h, w``), ``h``
    right before ``w`` is an image's height, not a head count: its label; None for any other name."""
    if names[k] == "h" and k + 1 < len(names) and names[k + 1] == "w":
        return Label(("height",), "h")
    return None


ONE = Label((), "1")  # an axis of size 1: its atoms are empty, as a product's with nothing left


def int_label(value: int) -> Label:
    return ONE if value == 1 else Label((str(value),), str(value))


def product(a: Axis, b: Axis) -> Axis:
    if a is None or b is None:
        return None
    atoms = cancel_atoms(a.atoms + b.atoms)
    return Label(atoms, "d_model" if atoms == ("d_head", "heads") else f"{a.text}*{b.text}")


def cancel_atoms(atoms: Sequence[str]) -> tuple[str, ...]:
    """Sorted atoms with each ``x`` and ``/x`` (a division by x) cancelled."""
    count = Counter(atoms)
    for atom in list(count):
        if atom.startswith("/") and atom[1:] in count:
            common = min(count[atom], count[atom[1:]])
            count[atom] -= common
            count[atom[1:]] -= common
    return tuple(sorted(count.elements()))


def quotient(a: Axis, b: Axis) -> Axis:
    if a is None or b is None or not b.atoms:
        return None
    if any(atom.startswith("/") for atom in b.atoms):
        return None
    rest = Counter(a.atoms)
    rest.subtract(b.atoms)
    if any(n < 0 for n in rest.values()):  # x // count where count is no factor of x: keep it as x·/count
        atoms = cancel_atoms(a.atoms + tuple("/" + atom for atom in b.atoms))
    else:
        atoms = tuple(sorted(rest.elements()))
    return Label(atoms, "d_head" if atoms == ("d_head",) else f"{a.text}//{b.text}")


_T = TypeVar("_T")


def replace(value: _T, **changes: object) -> _T:
    """``dataclasses.replace`` for the frozen records here (none has a ``__post_init__``), without its per-call
    walk over the fields: the evaluator makes tens of thousands of these per file."""
    unknown = changes.keys() - value.__dataclass_fields__.keys()  # type: ignore[attr-defined]
    if unknown:
        raise TypeError(f"{type(value).__name__} has no field {sorted(unknown)}")
    new = object.__new__(type(value))
    new.__dict__.update(value.__dict__)
    new.__dict__.update(changes)
    return new


def show(axes: Sequence[object]) -> str:
    """``batch, heads, seq_q, d_head`` (``?`` for an unnamed axis)."""
    return ", ".join("?" if a is None else (repr(a) if a is WILD else a.text) for a in axes)


@dataclass(frozen=True)
class Tensor:
    """What the checker knows about one tensor value.

    ``order[i]`` is the memory rank of axis i (0 = outermost); None when unknown.
    ``scale`` is "none", "head", "width", "heads", "other" or "unknown"; "unit" for vectors normalised to unit
    length (``F.normalize``), "cosine" for the product of two of them (similarities in [-1, 1], no temperature
    yet); "quarter" for d_head ** -0.25 (two of them make the scaling); ``role`` "scores" marks Q·Kᵀ.
    """

    axes: Optional[tuple[Axis, ...]] = None
    order: Optional[tuple[int, ...]] = None
    role: Optional[str] = None
    key_pos: Optional[int] = None
    scale: str = "none"
    scale_at: Optional[tuple[int, int]] = None
    divided: Optional[tuple[str, str]] = None  # (divisor's text, the scale before): ``/ cap`` that ``* cap`` undoes
    key_t: bool = False
    mask_at: Optional[tuple[int, int]] = None
    mask_source: Optional[str] = None
    mask_uid: Optional[int] = None
    partial: bool = False
    uid: int = 0
    param: bool = False  # an argument nobody annotated: a tensor or a size
    min_rank: Optional[int] = None  # a lower bound on the rank when the rank itself is unknown
    projected: bool = False  # a linear projection's output of unknown rank: its last axis is the features
    contracted: Axis = None  # scores: the axis Q·Kᵀ summed away (one query's features), where known

    @property
    def rank(self) -> Optional[int]:
        return None if self.axes is None else len(self.axes)


@dataclass(frozen=True)
class Dim:
    """An integer that is the size of a named axis (``B`` of ``B, T, C = x.shape``)."""

    label: Axis
    partial: bool = False
    uid: int = 0
    axis_of: Optional[tuple[str, int]] = None  # (tensor name, axis) it was read from: ``x.size(1)``, ``x.shape[1]``


@dataclass(frozen=True)
class Shape:
    """A tuple of sizes (``x.shape``, ``x.size()[:-1] + (h, d)``); ``owner`` is the tensor's name."""

    axes: tuple[Target, ...]
    owner: Optional[str] = None
    known: bool = True  # False: the tensor's rank is unknown
    partial: bool = False
    uid: int = 0


@dataclass(frozen=True)
class Pieces:
    """The result of ``split``/``chunk``: one tensor per piece, or any number of the same one."""

    items: tuple[Tensor, ...]
    repeat: bool = False
    partial: bool = False
    uid: int = 0


Value = Union[Tensor, Dim, Shape, Pieces]


def fresh(axes: Optional[Sequence[Axis]], **fields: object) -> Tensor:
    """A newly allocated (contiguous) tensor."""
    if axes is None:
        return Tensor(**fields)  # type: ignore[arg-type]
    axes = tuple(axes)
    return Tensor(axes=axes, order=tuple(range(len(axes))), **fields)  # type: ignore[arg-type]


def broadcast(main: Tensor, other: Tensor) -> Optional[tuple[Axis, ...]]:
    """The axes of an elementwise result that keeps ``main``'s: each size-1 axis of ``main`` takes the size of the
    axis of ``other`` it is broadcast against (unknown where that one is), the axes aligned from the right."""
    if main.axes is None or ONE not in main.axes:
        return main.axes
    if other.axes is None:
        return tuple(None if a == ONE else a for a in main.axes)  # ``other`` may have any size there
    n, m = len(main.axes), len(other.axes)
    return tuple(a if a != ONE or k - n + m < 0 else other.axes[k - n + m] for k, a in enumerate(main.axes))


def join(a: Value, b: Value) -> Optional[Value]:
    """What is known after two paths meet; None where they disagree in kind."""
    if a == b:
        return replace(a, partial=a.partial or b.partial)
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return _join_tensors(a, b)
    if isinstance(a, Dim) and isinstance(b, Dim):
        return Dim(a.label if a.label == b.label else None, a.partial or b.partial,
                   axis_of=a.axis_of if a.axis_of == b.axis_of else None)
    return None


def _join_tensors(a: Tensor, b: Tensor) -> Tensor:
    axes = None
    if a.axes is not None and b.axes is not None and len(a.axes) == len(b.axes):
        axes = tuple(x if x == y else None for x, y in zip(a.axes, b.axes))
    same = {f: getattr(a, f) if getattr(a, f) == getattr(b, f) else None
            for f in ("order", "role", "key_pos", "scale_at", "mask_at", "mask_source", "mask_uid", "contracted")}
    bounds = [t.rank or t.min_rank for t in (a, b)]
    if axes is None and None not in bounds:  # paths of different ranks: the rank is at least the smaller one
        same["min_rank"] = min(bounds)  # type: ignore[type-var]
    scale = a.scale if a.scale == b.scale else "unknown"
    wrong = [t for t in (a, b) if t.scale in ("width", "heads")]
    if {a.scale, b.scale} <= {"none", "width", "heads"} and len(wrong) == 1 and wrong[0].scale_at is not None:
        # ``if self.scale_attn_weights: w = w / self.embed_dim ** 0.5``: a wrong factor is wrong whenever its
        # path runs; the other path's lack of scaling is no excuse
        scale, same["scale_at"] = wrong[0].scale, wrong[0].scale_at
    return Tensor(
        axes=axes, scale=scale, key_t=a.key_t and b.key_t, param=a.param and b.param,
        projected=a.projected and b.projected,
        partial=a.partial or b.partial, uid=a.uid if a.uid == b.uid else 0, **same,  # type: ignore[arg-type]
    )


def swap(t: Tensor, d0: int, d1: int) -> Tensor:
    """``transpose(d0, d1)``."""
    rank = t.rank
    if rank is None:
        return replace(t, axes=None, order=None, key_pos=_swap_unknown(t.key_pos, d0, d1), key_t=False,
                       projected=False)
    try:
        i, j = _norm(d0, rank), _norm(d1, rank)
    except IndexError:
        return Tensor()
    perm = list(range(rank))
    perm[i], perm[j] = perm[j], perm[i]
    return permute(t, perm)


def _swap_unknown(key_pos: Optional[int], d0: int, d1: int) -> Optional[int]:
    if key_pos is None or d0 >= 0 or d1 >= 0:
        return None
    if {d0, d1} == {-1, -2}:
        return key_pos  # the scores of the other direction (see ``permute``)
    return d1 if key_pos == d0 else d0 if key_pos == d1 else key_pos


def permute(t: Tensor, perm: Sequence[int]) -> Tensor:
    """``permute(*perm)``: axis i of the result is axis perm[i] of ``t``."""
    rank = t.rank
    if rank is None or len(perm) != rank:
        return Tensor(scale=t.scale, scale_at=t.scale_at)
    try:
        perm = [_norm(p, rank) for p in perm]
    except IndexError:
        return Tensor()
    if sorted(perm) != list(range(rank)):
        return Tensor()
    axes = t.axes or ()
    order = None if t.order is None else tuple(t.order[p] for p in perm)
    key_pos = perm.index(t.key_pos) if t.key_pos is not None and t.key_pos >= 0 else None
    key_t = rank >= 2 and perm[-2:] == [rank - 1, rank - 2] and perm[:-2] == list(range(rank - 2))
    if key_t and t.role == "scores" and key_pos == rank - 2:
        key_pos = rank - 1  # scores with queries and keys swapped: the other direction of bidirectional attention
    return replace(t, axes=tuple(axes[p] for p in perm), order=order, key_pos=key_pos, key_t=key_t)


def _norm(dim: int, rank: int) -> int:
    if not -rank <= dim < rank:
        raise IndexError(dim)
    return dim % rank


def matmul(a: Tensor, b: Tensor, query_left: bool = True) -> Tensor:
    """``a @ b``: batch axes broadcast, (m, n) @ (n, p) -> (m, p). ``query_left``: the left operand is known to be
    the query (by its name), which settles which axis of channels-first scores holds the keys."""
    scale, scale_at = _matmul_scale(a, b)
    fields = {"scale": scale, "scale_at": scale_at}
    # channels-first attention contracts axis -2 of both: qᵀ·k, the query transposed and the key as it is. Either
    # side may be the query (``mkᵀ·qk`` gives keys by queries), so the keys' axis is known only where the left
    # operand is the query
    query_t = a.key_t and not b.key_t and 2 not in (a.rank, b.rank)
    oriented = b.key_t or query_left
    if b.key_t or query_t:
        fields.update(role="scores", key_pos=-1 if (a.rank is None or b.rank is None) and oriented else None,
                      contracted=a.axes[-1] if a.axes else None)  # ``a`` as multiplied: transposed already
    if a.axes is not None and len(a.axes) >= 3 and b.axes is None and (b.min_rank or 0) <= len(a.axes):
        # batched: keys or values of unknown layout (from a cache) have the query's batch axes
        b = replace(b, axes=a.axes[:-2] + (None, None))
    if a.axes is None or b.axes is None or len(a.axes) < 2 or len(b.axes) < 2:
        known = [t.rank or t.min_rank or 0 for t in (a, b)]
        return Tensor(min_rank=max(known) if max(known) >= 2 else None, **fields)  # type: ignore[arg-type]
    lead = a.axes[:-2] if len(a.axes) >= len(b.axes) else b.axes[:-2]
    axes = lead + (a.axes[-2], b.axes[-1])
    if b.key_t or query_t and oriented:
        fields["key_pos"] = len(axes) - 1
    return fresh(axes, **fields)


def _matmul_scale(a: Tensor, b: Tensor) -> tuple[str, Optional[tuple[int, int]]]:
    return matmul_scale((a, b))


def matmul_scale(tensors: Sequence[Tensor]) -> tuple[str, Optional[tuple[int, int]]]:
    """The scaling a product carries: the first operand's that has one; "cosine" for unit vectors on both
    sides, "unknown" for a unit vector against an unscaled one (how long the other vectors are, nobody knows)."""
    if len(tensors) == 2 and all(t.scale == "unit" for t in tensors):
        return "cosine", None
    if len(tensors) == 2 and all(t.scale == "quarter" for t in tensors):
        return "head", None  # d_head ** -0.25 on the queries and on the keys
    for t in tensors:
        if t.scale not in ("none", "unit"):
            return t.scale, t.scale_at
    return ("unknown" if any(t.scale == "unit" for t in tensors) else "none"), None


def groups(src: Sequence[Axis], tgt: Sequence[Target]) -> Optional[list[tuple[int, int]]]:
    """For each target axis, the range of source axes it is made of; None when unknown.

    A merge gives a range of several source axes; a split gives several target
    axes the same one-axis range. At most one ``-1`` (WILD) takes what is left.
    """
    wild = [i for i, t in enumerate(tgt) if t is WILD]
    if len(wild) > 1:
        return None
    if not wild:
        found = _greedy(src, tgt)
        return found[0] if found is not None and found[1] == len(src) else None
    w = wild[0]
    left = _greedy(src, tgt[:w])
    right = _greedy(src[::-1], tgt[:w:-1])
    if left is None or right is None or left[1] + right[1] > len(src):
        return None
    n = len(src)
    tail = [(n - e, n - s) for s, e in right[0]][::-1]
    return left[0] + [(left[1], n - right[1])] + tail


def _greedy(src: Sequence[Axis], tgt: Sequence[Target]) -> Optional[tuple[list[tuple[int, int]], int]]:
    """Match ``tgt`` against a prefix of ``src``; (ranges, source axes used) or None."""
    ranges: list[tuple[int, int]] = []
    i, carry = 0, None  # carry: atoms of source axis i not yet given to a target axis
    for t in tgt:
        if not isinstance(t, Label):
            return None
        need, start = Counter(t.atoms), i
        while need:
            if carry is None:
                if i >= len(src) or src[i] is None:
                    return None
                carry = Counter(src[i].atoms)  # type: ignore[union-attr]
                if not carry:
                    i, carry = i + 1, None
                    continue
            common = carry & need
            if not common:
                return None
            carry, need = carry - common, need - common
            if not carry:
                i, carry = i + 1, None
        ranges.append((start, i if carry is None else i + 1))
    if carry is not None:
        return None
    while i < len(src) and isinstance(src[i], Label) and not src[i].atoms:  # type: ignore[union-attr]
        i += 1  # trailing size-1 axes
    return ranges, i


def unique_index(axes: Sequence[object], label: Label) -> Optional[int]:
    """The position of ``label`` in ``axes`` when it occurs exactly once."""
    hits = [i for i, a in enumerate(axes) if isinstance(a, Label) and a == label]
    return hits[0] if len(hits) == 1 else None
