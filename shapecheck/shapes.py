"""Read jaxtyping annotations into shape specs, and match tensors against them.

``ArraySpec.match`` is the hot path of every checked call: it returns ``None``
when a tensor fits, or a short reason (no context) when it does not. The
decorator in ``shapecheck.runtime`` adds the function, argument and bindings.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass

import torch
from jaxtyping import AbstractArray

NAMED, FIXED, ANON, VARIADIC, ANON_VARIADIC, EXPR = range(6)


@dataclass(frozen=True)
class Dim:
    kind: int
    name: str = ""  # axis name, or the expression for EXPR
    size: int = 0  # for FIXED
    broadcast: bool = False  # '#name': size 1 matches anything


def _parse_dim(token: str) -> Dim:
    broadcast = token.startswith("#")
    token = token.lstrip("#")
    if token == "...":
        return Dim(ANON_VARIADIC)
    if token == "_":
        return Dim(ANON)
    if token.startswith("*"):
        return Dim(VARIADIC, token[1:])
    if token.isdigit():
        return Dim(FIXED, size=int(token), broadcast=broadcast)
    if token.isidentifier():
        return Dim(NAMED, token, broadcast=broadcast)
    return Dim(EXPR, token, broadcast=broadcast)


def _torch_dtypes(names: typing.Iterable[str]) -> frozenset[torch.dtype]:
    found = (getattr(torch, name, None) for name in names)
    return frozenset(d for d in found if isinstance(d, torch.dtype))


@dataclass(frozen=True)
class ArraySpec:
    """One array annotation: its axes, allowed dtypes and source text."""

    dims: tuple[Dim, ...]
    dtypes: frozenset[torch.dtype] | None  # None: any dtype
    text: str  # the annotation's dimension string, e.g. "batch seq_q d_model"
    dtype_label: str  # e.g. "Float"
    optional: bool = False

    def __post_init__(self) -> None:
        # Precomputed for the hot path: is there a variadic axis, and the plain named axes by position.
        variadic = any(d.kind in (VARIADIC, ANON_VARIADIC) for d in self.dims)
        simple = all(d.kind in (NAMED, ANON) and not d.broadcast for d in self.dims)
        object.__setattr__(self, "variadic", variadic)
        object.__setattr__(self, "_names", tuple(d.name if d.kind == NAMED else None for d in self.dims))
        object.__setattr__(self, "_simple", simple and not variadic)

    def match(self, value: object, memo: dict[str, object]) -> str | None:
        """``None`` when ``value`` fits (binding new axis names in ``memo``), else a reason."""
        if not isinstance(value, torch.Tensor):
            return f"is a {type(value).__name__}, not a Tensor"
        if self.dtypes is not None and value.dtype not in self.dtypes:
            return f"has dtype {value.dtype}, but the annotation {self.dtype_label}[...] does not allow it"
        shape = value.shape  # torch.Size, a tuple
        if self.variadic:
            return self._match_variadic(tuple(shape), memo)
        if len(shape) != len(self.dims):
            return f"has {len(shape)} axes {tuple(shape)}, but \"{self.text}\" needs {len(self.dims)}"
        if self._simple:  # only named or anonymous axes: the common case, inlined
            for name, size in zip(self._names, shape):
                if name is not None:
                    bound = memo.setdefault(name, size)
                    if bound != size:
                        return self._match_slow(tuple(shape), memo)
            return None
        return self._match_slow(tuple(shape), memo)

    def _match_slow(self, shape: tuple[int, ...], memo: dict[str, object]) -> str | None:
        for index, (dim, size) in enumerate(zip(self.dims, shape)):
            reason = _match_dim(dim, size, index, memo)
            if reason:
                return reason
        return None

    def _match_variadic(self, shape: tuple[int, ...], memo: dict[str, object]) -> str | None:
        star = next(i for i, d in enumerate(self.dims) if d.kind in (VARIADIC, ANON_VARIADIC))
        after = len(self.dims) - star - 1
        if len(shape) < len(self.dims) - 1:
            return f"has {len(shape)} axes {shape}, but \"{self.text}\" needs at least {len(self.dims) - 1}"
        middle = shape[star : len(shape) - after]
        dim = self.dims[star]
        if dim.kind == VARIADIC:
            bound = memo.get(dim.name)
            if bound is None:
                memo[dim.name] = middle
            elif bound != middle:
                return f"axes *{dim.name} are {middle}, but *{dim.name}={bound}"
        for index in range(star):
            reason = _match_dim(self.dims[index], shape[index], index, memo)
            if reason:
                return reason
        for offset in range(after):
            index = len(shape) - after + offset
            reason = _match_dim(self.dims[star + 1 + offset], shape[index], index, memo)
            if reason:
                return reason
        return None


def _match_dim(dim: Dim, size: int, index: int, memo: dict[str, object]) -> str | None:
    if dim.kind == NAMED:
        bound = memo.get(dim.name)
        if bound is None:
            memo[dim.name] = size
        elif bound != size and not (dim.broadcast and size == 1):
            return f"shape[{index}] is {size}, but {dim.name}={bound}"
    elif dim.kind == FIXED:
        if size != dim.size and not (dim.broadcast and size == 1):
            return f"shape[{index}] is {size}, but the annotation fixes it at {dim.size}"
    elif dim.kind == EXPR:
        try:
            expected = eval(dim.name, {"__builtins__": {}}, dict(memo))  # noqa: S307 - annotation text
        except (NameError, TypeError, SyntaxError):
            return None
        if size != expected and not (dim.broadcast and size == 1):
            return f"shape[{index}] is {size}, but {dim.name}={expected}"
    return None


def spec_of(annotation: object) -> ArraySpec | None:
    """The spec of a jaxtyping array annotation (``Optional[...]`` allowed), else ``None``."""
    optional = False
    if typing.get_origin(annotation) in (typing.Union, _union_type()):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1 or len(args) == len(typing.get_args(annotation)):
            return None
        annotation, optional = args[0], True
    if not (isinstance(annotation, type) and issubclass(annotation, AbstractArray)):
        return None
    raw = getattr(annotation, "dtypes", None)
    dtypes = _torch_dtypes(raw) if isinstance(raw, (list, tuple)) else None
    label = annotation.__name__.split("[", 1)[0]
    text = annotation.dim_str
    return ArraySpec(tuple(_parse_dim(t) for t in text.split()), dtypes, text, label, optional)


ReturnSpec = typing.Union[ArraySpec, tuple[typing.Optional[ArraySpec], ...], None]


def return_specs(annotation: object) -> list[ReturnSpec]:
    """The return's alternatives: an ``ArraySpec`` for a tensor, a tuple of specs for ``tuple[...]``.

    ``X | tuple[X, Y]`` (a tensor, or a tuple on request) gives both alternatives;
    the checker picks the one that fits the returned object's type.
    """
    if typing.get_origin(annotation) in (typing.Union, _union_type()):
        args = typing.get_args(annotation)
        if spec_of(annotation) is None and any(typing.get_origin(a) is tuple for a in args):
            return [r for a in args for r in return_specs(a) if r is not None]
    if typing.get_origin(annotation) is tuple:
        specs = tuple(spec_of(a) for a in typing.get_args(annotation))
        return [specs] if any(specs) else []
    spec = spec_of(annotation)
    return [spec] if spec is not None else []


def erase(annotation: object) -> object:
    """The annotation with every jaxtyping array replaced by its array type (for beartype)."""
    if isinstance(annotation, type) and issubclass(annotation, AbstractArray):
        return annotation.array_type
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, _union_type()):
        return typing.Union[tuple(erase(a) for a in args)]
    if origin is tuple and args:
        return tuple[tuple(erase(a) for a in args)]
    return annotation


def _union_type() -> object:
    import types

    return getattr(types, "UnionType", typing.Union)
