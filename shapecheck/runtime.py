"""``@checked``: runtime shape checking from jaxtyping annotations, with beartype for the rest.

The jaxtyping annotations on a signature are the contract. ``checked`` compiles
them once into ``ArraySpec`` matchers (a few microseconds a call), binds axis
sizes from the module's config (``self.config``) and its own size attributes
(``self.embed_dim``, ``self.num_heads``, ``self.head_dim`` ...: the vocabulary's
names for d_model, heads, d_head, d_k, d_v, d_ff, d_in, vocab) before looking at any
argument, and hands every non-array parameter to beartype. A failure raises
``ShapeError`` whose first line is the diagnosis::

    MultiHeadAttention.forward: query.shape[2] is 256, but d_model=512 (bound by the config)

With ``SHAPECHECK_DISABLE=1`` in the environment at import time nothing is
wrapped: the decorator returns the function object itself. ``checks_disabled()``
switches checking off at run time, for a block.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from beartype import beartype

from shapecheck.vocabulary import AXES, SYNONYMS, canonical
from shapecheck.errors import ShapeError
from shapecheck.shapes import ArraySpec, erase, return_specs, spec_of

DISABLED_BY_ENV = os.environ.get("SHAPECHECK_DISABLE", "").strip() not in ("", "0", "false", "False")

F = typing.TypeVar("F", bound=Callable[..., typing.Any])


class _State:
    enabled = True


_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)


_STATE = _State()


@contextlib.contextmanager
def checks_disabled() -> Iterator[None]:
    """Turn shape checks off inside the block (for tests and notebooks)."""
    previous, _STATE.enabled = _STATE.enabled, False
    try:
        yield
    finally:
        _STATE.enabled = previous


def checks_enabled() -> bool:
    """Whether checked functions check now (``False`` inside ``checks_disabled()``)."""
    return _STATE.enabled and not DISABLED_BY_ENV


# Axes a module's own size attributes fix (never sequence lengths: an attribute like max_seq_len is a bound, not a size).
_WEIGHT_AXES = frozenset({"d_model", "heads", "d_head", "d_k", "d_v", "d_ff", "d_in", "vocab"})
_ATTRIBUTES: tuple[tuple[str, str], ...] = tuple(
    (name, canonical(name)) for name in sorted({*AXES, *SYNONYMS})
    if canonical(name) in _WEIGHT_AXES and len(name) > 2
)


def config_axes(owner: object, remember: bool = True) -> dict[str, int]:
    """Axis sizes fixed by ``owner.config``: its fields named in the axis vocabulary (cached on the
    config unless ``remember`` is false)."""
    config = getattr(owner, "config", None)
    if config is None:
        return {}
    cached = getattr(config, "__dict__", {}).get("_shapecheck_axes")
    if cached is not None:
        return cached
    names = [n for n in dir(type(config)) if n in AXES] + [n for n in vars(config) if n in AXES]
    sizes = {}
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            sizes[name] = value
    if remember and hasattr(config, "__dict__"):
        config.__dict__["_shapecheck_axes"] = sizes  # frozen dataclasses allow this write
    return sizes


def attribute_axes(owner: object, remember: bool = True) -> dict[str, tuple[int, str]]:
    """Axis sizes fixed by the module's own attributes (``self.embed_dim``, ``self.num_heads``, ``self.head_dim``):
    ``{axis: (size, "self.embed_dim")}``, read once per instance."""
    state = getattr(owner, "__dict__", None)
    if state is None:
        return {}
    cached = state.get("_shapecheck_attribute_axes")
    if cached is not None:
        return cached
    found: dict[str, tuple[int, str]] = {}
    for name, axis in _ATTRIBUTES:
        value = state.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and axis not in found:
            found[axis] = (value, f"self.{name}")
    if remember:
        state["_shapecheck_attribute_axes"] = found
    return found


def owner_axes(owner: object, remember: bool = True) -> dict[str, tuple[int, str]]:
    """Every size the owner fixes before any argument is read: its config's, then its own attributes'."""
    sizes = {axis: (value, "the config") for axis, value in config_axes(owner, remember).items()}
    for axis, entry in attribute_axes(owner, remember).items():
        sizes.setdefault(axis, entry)
    return sizes


def _owner_sizes(owner: object) -> dict[str, int]:
    """``owner_axes`` without the origins, cached on the instance (the per-call fast path)."""
    state = getattr(owner, "__dict__", None)
    cached = state.get("_shapecheck_sizes") if state is not None else None
    if cached is None:
        cached = {axis: value for axis, (value, _) in owner_axes(owner).items()}
        if state is not None:
            state["_shapecheck_sizes"] = cached
    return cached


def _cached_owner_sizes(owner: object) -> dict[str, int]:
    """``_owner_sizes`` without writing anything: what an eager call cached, else computed afresh."""
    state = getattr(owner, "__dict__", None)
    cached = state.get("_shapecheck_sizes") if state is not None else None
    if cached is not None:
        return cached
    return {axis: value for axis, (value, _) in owner_axes(owner, remember=False).items()}


@dataclass(frozen=True)
class _Param:
    name: str
    index: int  # position, or a large number for keyword-only
    default: object
    spec: ArraySpec


class _Signature:
    """The compiled contract of one function: array parameters and the return."""

    def __init__(self, fn: Callable[..., typing.Any]) -> None:
        hints = typing.get_type_hints(fn, include_extras=True)
        params = list(inspect.signature(fn).parameters.values())
        self.is_method = bool(params) and params[0].name == "self"
        self.params: list[_Param] = []
        for index, p in enumerate(params):
            spec = spec_of(hints.get(p.name))
            if spec is None:
                continue
            position = index if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else 1 << 30
            default = None if p.default is inspect.Parameter.empty else p.default
            self.params.append(_Param(p.name, position, default, spec))
        self.returns = return_specs(hints.get("return"))
        # beartype is there for the non-array annotations; where every annotation is an array the matchers check
        # (a Tensor, its dtype, its shape), it would only repeat them, at a few microseconds a call
        others = [name for name, hint in hints.items() if name != "return" and spec_of(hint) is None]
        arrays_only = not others and ("return" not in hints or spec_of(hints["return"]) is not None)
        self.body = fn if arrays_only else _beartyped(fn, hints)


def _beartyped(fn: Callable[..., typing.Any], hints: dict[str, object]) -> Callable[..., typing.Any]:
    """A copy of ``fn`` that beartype checks, with array annotations erased to ``Tensor``."""
    shim = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    shim.__kwdefaults__ = fn.__kwdefaults__
    shim.__qualname__ = fn.__qualname__
    shim.__module__ = fn.__module__
    shim.__annotations__ = {name: erase(hint) for name, hint in hints.items()}
    return beartype(shim)


def _where(name: str, reason: str) -> str:
    return f"{name}.{reason}" if reason.startswith("shape[") else f"{name} {reason}"


def _bound_text(memo: dict[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in memo.items())


class _Failure:
    """Replays a failing call with origin tracking to say where each axis was bound."""

    def __init__(self, qualname: str, bound: dict[str, tuple[int, str]]) -> None:
        self.qualname = qualname
        self.memo: dict[str, object] = {axis: value for axis, (value, _) in bound.items()}
        self.origin = {axis: origin for axis, (_, origin) in bound.items()}

    def feed(self, name: str, spec: ArraySpec, value: object) -> str | None:
        before = set(self.memo)
        reason = spec.match(value, self.memo)
        for axis in set(self.memo) - before:
            index = next((i for i, d in enumerate(spec.dims) if d.name == axis), None)
            fixed = index is not None and not spec.variadic
            self.origin[axis] = f"{name}.shape[{index}]" if fixed else f"{name}.shape"
        return reason

    def error(self, name: str, spec: ArraySpec, value: object, reason: str) -> ShapeError:
        axis = next((a for a in self.origin if reason.endswith(f"but {a}={self.memo[a]}")), None)
        where = f" (bound by {self.origin[axis]})" if axis else ""
        got = tuple(value.shape) if hasattr(value, "shape") else type(value).__name__
        lines = [
            f"{self.qualname}: {_where(name, reason)}{where}",
            f"  {name}: expected \"{spec.text}\", got {got}",
            f"  bound: {_bound_text(self.memo) or '(nothing)'}",
        ]
        return ShapeError("\n".join(lines))


def _returned(out: object, returns: list) -> Iterator[tuple[str, ArraySpec, object]]:
    """(label, spec, value) for each returned array, choosing the alternative by ``out``'s type."""
    for alternative in returns:
        if isinstance(alternative, ArraySpec) and not isinstance(out, tuple):
            if not (alternative.optional and out is None):
                yield "return value", alternative, out
            return
        if isinstance(alternative, tuple) and isinstance(out, tuple):
            for index, (spec, item) in enumerate(zip(alternative, out)):
                if spec is not None and not (spec.optional and item is None):
                    yield f"return value[{index}]", spec, item
            return


def _diagnose(sig: _Signature, qualname: str, args: tuple, kwargs: dict, out: object = None) -> ShapeError:
    """The readable error for a call known to fail (slow path, run once)."""
    failure = _Failure(qualname, owner_axes(args[0]) if sig.is_method and args else {})
    for p in sig.params:
        value = args[p.index] if p.index < len(args) else kwargs.get(p.name, p.default)
        if value is None and p.spec.optional:
            continue
        reason = failure.feed(p.name, p.spec, value)
        if reason:
            return failure.error(p.name, p.spec, value, reason)
    for name, spec, value in _returned(out, sig.returns):
        reason = failure.feed(name, spec, value)
        if reason:
            return failure.error(name, spec, value, reason)
    return ShapeError(f"{qualname}: shapes do not match the annotations")


def _arguments_fit(sig: _Signature, memo: dict[str, object], args: tuple, kwargs: dict) -> bool:
    """Whether every array argument fits its annotation (binding axis sizes in ``memo``)."""
    for p in sig.params:
        value = args[p.index] if p.index < len(args) else kwargs.get(p.name, p.default)
        if value is None and p.spec.optional:
            continue
        if p.spec.match(value, memo):
            return False
    return True


def _returns_fit(sig: _Signature, memo: dict[str, object], out: object) -> bool:
    """Whether every returned array fits its annotation, with the sizes the arguments bound."""
    return not any(spec.match(value, memo) for _, spec, value in _returned(out, sig.returns))


def _checked_call(sig: _Signature, qualname: str, memo: dict[str, object], body: Callable[..., typing.Any],
                  args: tuple, kwargs: dict) -> typing.Any:
    """Check the arguments, call ``body``, check what it returned: the one path of every checked call."""
    if not _arguments_fit(sig, memo, args, kwargs):
        raise _diagnose(sig, qualname, args, kwargs) from None
    out = body(*args, **kwargs)
    if not _returns_fit(sig, memo, out):
        raise _diagnose(sig, qualname, args, kwargs, out) from None
    return out


def _traced_memo(sig: _Signature, args: tuple) -> dict[str, object]:
    """The owner's sizes for a traced call: nothing is cached on the module (a write would be replayed)."""
    return dict(_cached_owner_sizes(args[0])) if sig.is_method and args else {}


def _signature_now(fn: Callable[..., typing.Any]) -> _Signature | None:
    """The compiled contract, built at decoration time where the annotations already resolve (so a
    ``torch.compile`` trace never has to build it); ``None`` where they name something defined later."""
    try:
        return _Signature(fn)
    except Exception:  # noqa: BLE001 - a forward reference: built at the first eager call instead
        return None


def _constant_result(fn: F) -> F:
    """``torch.compiler.assume_constant_result`` without importing ``torch._dynamo`` with shapecheck (a report on
    meta never needs it): the same mark, which dynamo reads when it meets a call of ``fn`` while tracing."""
    fn._dynamo_marked_constant = True  # type: ignore[attr-defined]
    return fn


_SYMBOLIC = "symbolic"  # a traced size that is not a plain integer: the checks are traced instead
# What ``_fits`` looks a contract up in, and where its owner's sizes are read from (``_plan``), by a string key:
# every checked function shares the wrapper's code, and dynamo (torch 2.11) makes an integer key that differs
# between the functions it inlines a symbolic size; a string stays a constant.
_CONTRACTS: dict[str, _Signature] = {}
_PLANS: dict[str, tuple[tuple[bool, str, str], ...]] = {}


def _static(size: object) -> bool:
    """Whether a traced size is a plain integer. Dynamo answers ``isinstance(size, torch.SymInt)`` with False for a
    symbolic size (it reports the type the symbol stands for), so ask what it can prove without a guard: a bound no
    real size reaches holds for every integer and for no unbounded symbol."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    return bool(statically_known_true(size < 2**62))  # 2**62: no real size reaches it


def _described(value: object) -> object:
    """What the contract needs of one traced value, as constants: (shape, dtype) of a tensor of static
    sizes, a tuple of those, None, ``_SYMBOLIC`` where a size is symbolic, else the type's name."""
    if isinstance(value, torch.Tensor):
        shape = tuple(value.shape)
        if not all(_static(size) for size in shape):
            return _SYMBOLIC
        return shape, value.dtype
    if isinstance(value, tuple):
        return tuple(_described(item) for item in value)
    return None if value is None else type(value).__name__


def _rebuilt(described: object) -> object:
    """A meta tensor (or a tuple of them) of the described shape and dtype; a stand-in for anything else."""
    if isinstance(described, tuple) and len(described) == 2 and isinstance(described[1], torch.dtype):
        return torch.empty(described[0], dtype=described[1], device="meta")
    if isinstance(described, tuple):
        return tuple(_rebuilt(item) for item in described)
    return None if described is None else _NOT_AN_ARRAY


_NOT_AN_ARRAY = object()  # stands for a traced value that is no tensor: an array annotation refuses it


def _symbolic(described: object) -> bool:
    return described == _SYMBOLIC or (isinstance(described, tuple) and any(_symbolic(item) for item in described))


def _plan(sig: _Signature) -> tuple[tuple[bool, str, str], ...]:
    """Where a traced call reads the owner's sizes from: (from the config, name, axis) for every axis of the
    weights that the contract names (in a dimension or an expression), in ``owner_axes``' order of precedence:
    the config's field of that name first, then the module's own attributes."""
    texts = [spec.text for p in sig.params for spec in [p.spec]]
    texts += [spec.text for alternative in sig.returns
              for spec in (alternative if isinstance(alternative, tuple) else (alternative,)) if spec is not None]
    named = {word for text in texts for word in re.findall(r"[A-Za-z_]\w*", text)}
    axes = sorted(named & _WEIGHT_AXES)
    return tuple((True, axis, axis) for axis in axes) + tuple(
        (False, name, axis) for name, axis in _ATTRIBUTES if axis in axes)


@_constant_result
def _plan_of(contract: str) -> tuple[tuple[bool, str, str], ...]:
    return _PLANS[contract]


def _traced_owner_sizes(owner: object, contract: str) -> tuple[tuple[str, int], ...]:
    """The sizes ``owner_axes`` would give for the axes the contract names, read so that dynamo guards only the
    attributes it reads (not the vocabulary's tables)."""
    state = getattr(owner, "__dict__", None)
    if state is None:
        return ()
    config = state.get("config")
    found: dict[str, int] = {}
    for from_config, name, axis in _plan_of(contract):
        if axis in found:
            continue
        value = getattr(config, name, None) if from_config else state.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            found[axis] = value
    return tuple(found.items())


@_constant_result
def _fits(contract: str, owner: tuple, args: tuple, kwargs: tuple, out: object = _SYMBOLIC) -> bool:
    """Whether a traced call of static sizes fits contract ``_CONTRACTS[contract]``, decided in plain Python
    while dynamo traces and folded into the graph as a constant: no guard on the contract's own objects, so a
    compiled call pays for the shapes it guards anyway and nothing more."""
    sig, memo = _CONTRACTS[contract], dict(owner)
    try:
        if not _arguments_fit(sig, memo, _rebuilt(args), dict(_rebuilt(kwargs))):
            return False
        return out == _SYMBOLIC or _returns_fit(sig, memo, _rebuilt(out))  # _SYMBOLIC: the forward has not run yet
    except Exception:  # noqa: BLE001 - anything unexpected: the traced checks decide, with their message
        return False


def _wrap(fn: Callable[..., typing.Any]) -> Callable[..., typing.Any]:
    sig = _signature_now(fn)
    qualname = fn.__qualname__.rsplit("<locals>.", 1)[-1]
    contract = f"contract {len(_CONTRACTS)}" if sig is not None else None  # traced calls are checked by key
    if sig is not None:
        _CONTRACTS[contract], _PLANS[contract] = sig, _plan(sig)
    method = sig is not None and sig.is_method

    @functools.wraps(fn)
    def wrapper(*args: typing.Any, **kwargs: typing.Any) -> typing.Any:
        nonlocal sig
        if not _STATE.enabled:
            return fn(*args, **kwargs)
        # Under torch.compile the checks run once, while tracing, on the traced sizes (a compiled call runs no
        # check code); nothing is cached on the module (a write would be replayed after every compiled call) and
        # beartype, which checks Python values dynamo already guards, is left out.
        if _compiling():
            if contract is not None:
                return _traced(args, kwargs)
            if sig is None:  # annotations that did not resolve at decoration time: no contract to trace
                return fn(*args, **kwargs)
            return _checked_call(sig, qualname, _traced_memo(sig, args), fn, args, kwargs)
        if sig is None:
            sig = _Signature(fn)
        memo = dict(_owner_sizes(args[0])) if sig.is_method and args else {}
        return _checked_call(sig, qualname, memo, sig.body, args, kwargs)

    def _traced(args: tuple, kwargs: dict) -> typing.Any:
        """A call dynamo traces. Static sizes: ``_fits`` decides in plain Python, folded into the graph as a
        constant, so the compiled call guards only what the forward itself reads. A symbolic size: the checks are
        traced, so the sizes' relations go into the graph's guards. A call that does not fit: the traced checks
        raise the readable error."""
        owner = _traced_owner_sizes(args[0], contract) if method and args else ()
        given = (None, *map(_described, args[1:])) if method else tuple(map(_described, args))
        named = tuple((k, _described(v)) for k, v in kwargs.items())
        static = not _symbolic(given) and not any(_symbolic(v) for _, v in named)
        if not (static and _fits(contract, owner, given, named)):
            return _checked_call(sig, qualname, _traced_memo(sig, args), fn, args, kwargs)
        out = fn(*args, **kwargs)
        returned = _described(out)
        if not _symbolic(returned) and _fits(contract, owner, given, named, returned):
            return out
        return _checked_call(sig, qualname, _traced_memo(sig, args), lambda *_, **__: out, args, kwargs)

    wrapper.__wrapped_by_shapecheck__ = True  # type: ignore[attr-defined]
    return wrapper


def checked(obj: F) -> F:
    """Check a function's (or an ``nn.Module`` class's ``forward``) jaxtyping annotations at run time."""
    if DISABLED_BY_ENV:
        return obj
    if isinstance(obj, type):
        obj.forward = _wrap(obj.forward)  # type: ignore[attr-defined]
        return obj
    return typing.cast(F, _wrap(obj))
