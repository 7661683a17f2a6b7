"""Which ``forward`` arguments to pass, their axes, and example tensors at any sizes.

Each argument's axes come from its jaxtyping annotation (``Float[Tensor, "batch
seq_q d_model"]``); an unannotated argument with a well-known name (``input_ids``,
``hidden_states``, ``query``, ...) gets the usual axes. ``batch``, ``seq``,
``seq_q`` and ``seq_k`` are exported as dynamic dimensions; every other axis
takes its size from the module's config (``d_model``, ``heads``, ...) or from
``sizes``. Inputs shaped by a transformers config are built from it: vision
``pixel_values`` (batch, channels, image, image) and audio ``input_features``
(batch, mel bins, 2·max_source_positions); an encoder-decoder gets
``decoder_input_ids`` too, its encoder input along ``seq_k`` and its decoder's
along ``seq_q``. A forward that takes ``use_cache`` is called with
``use_cache=False``, so no cache object is returned. The convention probe
(``shapecheck.convention``) overrides the names' guesses for unannotated
hidden-state arguments: a ``forward(query, key, value)`` it finds to be
self-attention gets one ``seq``, and a module that behaves sequence-first
gets ``(seq, batch, d_model)``.
"""

from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, replace
from typing import Any, Optional, Union

import torch
from torch import Tensor, nn

from shapecheck.convention import decide
from shapecheck.vocabulary import canonical
from shapecheck.runtime import config_axes
from shapecheck.errors import UsageError
from shapecheck.images import image_input
from shapecheck.shapes import ANON, ANON_VARIADIC, EXPR, FIXED, NAMED, VARIADIC, ArraySpec, spec_of

DYNAMIC_AXES = ("batch", "seq", "seq_q", "seq_k")
EXAMPLE_SIZES = {"batch": 3, "seq": 7, "seq_q": 7, "seq_k": 5}
# Tried when the first sizes cannot be traced (code that needs even lengths, windows of 4 or 8, ...).
EVEN_SIZES = {"batch": 4, "seq": 16, "seq_q": 16, "seq_k": 8}

# Axes of unannotated arguments, by the names transformers and the seed posts use.
_TOKENS = ("batch", "seq")
_STATES = ("batch", "seq", "d_model")
KNOWN_ARGUMENTS: dict[str, tuple[tuple[str, ...], str]] = {
    "input_ids": (_TOKENS, "int"), "token_type_ids": (_TOKENS, "int"), "segment_ids": (_TOKENS, "int"),
    "segment_info": (_TOKENS, "int"), "position_ids": (_TOKENS, "int"), "attention_mask": (_TOKENS, "int"),
    "x": (_STATES, "float"), "query": (("batch", "seq_q", "d_model"), "float"), "hidden_states": (_STATES, "float"),
    "inputs_embeds": (_STATES, "float"), "src": (_STATES, "float"), "tgt": (_STATES, "float"),
    "key": (("batch", "seq_k", "d_model"), "float"), "value": (("batch", "seq_k", "d_model"), "float"),
    "input": (_STATES, "float"), "inputs": (_STATES, "float"), "decoder_input_ids": (_TOKENS, "int"),
    "idx": (_TOKENS, "int"), "ids": (_TOKENS, "int"), "token_ids": (_TOKENS, "int"), "tokens": (_TOKENS, "int"),
}
# Arguments whose static sizes come from the module's config: name -> (config fields, a function of them).
CONFIG_SHAPED: dict[str, tuple[tuple[str, ...], object]] = {
    "pixel_values": (("num_channels", "image_size"), lambda c, i: ("batch", c, i, i)),
    "input_features": (("num_mel_bins", "max_source_positions"), lambda m, s: ("batch", m, 2 * s)),
}
DECODER_INPUTS = ("decoder_input_ids",)
CONSTANTS = {"use_cache": False}  # passed when forward takes them: no KV-cache object in the output

Axis = Union[str, int]  # an axis name, or a fixed size


@dataclass(frozen=True)
class Argument:
    """One tensor argument of ``forward``: its axes (names or sizes) and element kind."""

    name: str
    axes: tuple[Axis, ...]
    kind: str  # "float" | "int" | "bool"
    required: bool
    fill: Optional[float] = None  # a constant (a mask the probe decided: every key visible in its convention)

    def example(self, sizes: dict[str, int], device: torch.device, ids: tuple[int, int] = (0, 2)) -> Tensor:
        """Random values; masks all ones (nothing padded); token ids in ``ids`` (no padding or special token)."""
        shape = tuple(a if isinstance(a, int) else sizes[a] for a in self.axes)
        if self.fill is not None:
            dtype = {"bool": torch.bool, "int": torch.long}.get(self.kind, torch.float32)
            return torch.full(shape, self.fill, dtype=dtype, device=device)
        if self.kind == "float":
            return torch.randn(shape, device=device)
        if self.kind == "bool":
            return torch.ones(shape, dtype=torch.bool, device=device)
        if "mask" in self.name:
            return torch.ones(shape, dtype=torch.long, device=device)
        return torch.randint(ids[0], ids[1], shape, device=device)


@dataclass(frozen=True)
class InputPlan:
    """The arguments ``prove`` passes and the sizes of their static axes."""

    arguments: tuple[Argument, ...]
    device: torch.device = torch.device("cpu")  # where the module's parameters live
    constants: tuple[tuple[str, object], ...] = ()  # non-tensor keyword arguments (use_cache=False)
    ids: tuple[int, int] = (0, 2)  # token ids drawn from [low, high): no padding or special token
    decision: Any = None  # how to call forward (``shapecheck.convention.Decision``); None when --inputs/--cross chose

    @property
    def convention(self) -> dict[str, Any]:
        """The ``convention`` key of prove's JSON."""
        from shapecheck.convention import CHOSEN, Decision

        return (self.decision or Decision(CHOSEN, reason="not probed: --inputs/--cross chose the arguments")).as_json()

    @property
    def dynamic_axes(self) -> list[str]:
        """Dynamic axis names in order of first appearance."""
        seen: list[str] = []
        for arg in self.arguments:
            seen += [a for a in arg.axes if isinstance(a, str) and a not in seen]
        return seen

    def examples(self, sizes: dict[str, int]) -> dict[str, Tensor]:
        """Example tensors, each dynamic axis at ``sizes[axis]``."""
        return {arg.name: arg.example(sizes, self.device, self.ids) for arg in self.arguments}

    def call(self, tensors: dict[str, Tensor]) -> dict[str, object]:
        """Keyword arguments for ``forward``: the tensors and the constants."""
        return {**tensors, **dict(self.constants)}

    def dynamic_shapes(self) -> dict[str, object]:
        """``torch.export`` dynamic_shapes: every named axis automatic (static or dynamic, as traced)."""
        shapes: dict[str, object] = {arg.name: {i: _auto(a) for i, a in enumerate(arg.axes) if isinstance(a, str)}
                                     for arg in self.arguments}
        return {**shapes, **{name: None for name, _ in self.constants}}


def _auto(axis: str) -> object:
    dim = torch.export.Dim
    return getattr(dim, "AUTO", None) or dim(axis)  # torch < 2.5 has no Dim.AUTO


def forward_hints(module: nn.Module) -> dict[str, object]:
    """``forward``'s type hints, read from the undecorated function."""
    function = inspect.unwrap(type(module).forward)
    try:
        return typing.get_type_hints(function, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable string annotations: treat as unannotated
        return {}


def plan_inputs(
    module: nn.Module, *, names: Optional[list[str]] = None, cross: bool = False, sizes: Optional[dict[str, int]] = None
) -> InputPlan:
    """The arguments to pass: ``names``, or the required ones (plus keys and values when ``cross``)."""
    params = _forward_parameters(module)
    hints = forward_hints(module)
    static = {**config_axes(module), **(sizes or {})}
    chosen = _choose(module, params, hints, names, cross)
    decision = decide(module) if not names and not cross else None
    arguments = tuple(_decided_argument(decision, params[n], hints.get(n)) or _argument(module, params[n], hints.get(n), static)
                      for n in chosen)
    arguments = _as_decided(arguments, decision, hints)
    constants = tuple((name, value) for name, value in CONSTANTS.items() if name in params)
    plan = InputPlan(arguments, module_device(module), constants, token_ids(module), decision)
    return _self_attention(_encoder_decoder(plan))


# A required mask the probe decided, every key visible in its convention: (axes with q/k for seq_q/seq_k, kind, fill).
_MASK_AXES = {"b1ts": ("batch", 1, "q", "k"), "b11s": ("batch", 1, 1, "k"), "bs": ("batch", "k"), "bts": ("batch", "q", "k"),
              "ts": ("q", "k")}
_MASK_FILL = {"keep": ("bool", 1.0), "ignore": ("bool", 0.0), "additive": ("float", 0.0), "keep_float": ("float", 1.0)}


def _decided_argument(decision: Any, param: inspect.Parameter, hint: object) -> Optional[Argument]:
    """An unannotated required mask or position argument as the probe decided it, else None (read from its name)."""
    if decision is None or not decision.runs or spec_of(hint) is not None:
        return None
    conv = decision.convention
    q, k = ("seq", "seq") if not conv.cross else ("seq_q", "seq_k")
    required = param.default is inspect.Parameter.empty
    if param.name == conv.mask_name and conv.mask_kind in _MASK_FILL:
        kind, fill = _MASK_FILL[conv.mask_kind]
        axes = tuple({"q": q, "k": k}.get(a, a) if isinstance(a, str) else a for a in _MASK_AXES[conv.mask_shape])
        return Argument(param.name, axes, kind, required, fill)
    if conv.supplied.get(param.name) == "positions":
        return Argument(param.name, ("batch", q), "int", required)
    return None


def _as_decided(arguments: tuple[Argument, ...], decision: Any, hints: dict[str, object]) -> tuple[Argument, ...]:
    """The probe's decision over the names' guesses: self-attention's keys and values are the query's own sequence
    (``seq``), and a module that behaves sequence-first reads ``(seq, batch, ...)``. An annotated argument keeps its axes."""
    if decision is None or not decision.runs:
        return arguments
    conv = decision.convention
    roles = {conv.query_name, conv.key_name, conv.value_name, conv.memory_name} - {None}
    found = []
    for arg in arguments:
        axes = arg.axes
        if arg.name in roles and spec_of(hints.get(arg.name)) is None:
            if not conv.cross:
                axes = tuple("seq" if a in ("seq_q", "seq_k") else a for a in axes)
            if not decision.batch_first and "batch" in axes:
                seq = next((a for a in axes if a in ("seq", "seq_q", "seq_k")), None)
                axes = tuple(seq if a == "batch" else "batch" if a == seq else a for a in axes) if seq else axes
        found.append(replace(arg, axes=axes))
    return tuple(found)


SPECIAL_TOKENS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id", "sep_token_id", "cls_token_id")


def token_ids(module: nn.Module) -> tuple[int, int]:
    """Two consecutive ids that are no special token of the config and fit the largest (vocabulary) table."""
    config = getattr(module, "config", None)
    special = {getattr(config, name, None) for name in SPECIAL_TOKENS}
    rows = max((m.num_embeddings for m in module.modules() if isinstance(m, nn.Embedding)), default=2)  # the vocabulary
    low = next((k for k in range(rows - 1) if k not in special and k + 1 not in special), 0)
    return low, min(low + 2, max(rows, 1))


def _encoder_decoder(plan: InputPlan) -> InputPlan:
    """With decoder inputs, the encoder's sequence is ``seq_k`` and the decoder's ``seq_q`` (it gives the output)."""
    names = [arg.name for arg in plan.arguments]
    if not any(n in DECODER_INPUTS for n in names) or all(n in DECODER_INPUTS for n in names):
        return plan
    return replace(plan, arguments=tuple(_sequence_as(arg, "seq_q" if arg.name in DECODER_INPUTS else "seq_k")
                                         for arg in plan.arguments))


def _sequence_as(arg: Argument, axis: str) -> Argument:
    return replace(arg, axes=tuple(axis if a == "seq" else a for a in arg.axes))


def module_device(module: nn.Module) -> torch.device:
    """The device of the module's first parameter or buffer (CPU for a module with neither)."""
    tensor = next(iter(module.parameters()), None)
    tensor = tensor if tensor is not None else next(iter(module.buffers()), None)
    return tensor.device if tensor is not None else torch.device("cpu")


def _self_attention(plan: InputPlan) -> InputPlan:
    """Queries with no keys of their own are the ``seq`` of self-attention."""
    axes = plan.dynamic_axes
    if "seq_q" not in axes or "seq_k" in axes or "seq" in axes:
        return plan
    rename = lambda a: "seq" if a == "seq_q" else a  # noqa: E731
    return replace(plan, arguments=tuple(replace(arg, axes=tuple(map(rename, arg.axes))) for arg in plan.arguments))


def _forward_parameters(module: nn.Module) -> dict[str, inspect.Parameter]:
    signature = inspect.signature(inspect.unwrap(type(module).forward))
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {n: p for n, p in list(signature.parameters.items())[1:] if p.kind in kinds}


def _is_tensor(name: str, hints: dict[str, object]) -> bool:
    return spec_of(hints.get(name)) is not None or name in KNOWN_ARGUMENTS or name in CONFIG_SHAPED


def config_shaped(module: nn.Module, name: str) -> Optional[tuple[Axis, ...]]:
    """The axes of a config-shaped argument (``pixel_values``, ``input_features``) from ``module.config``, else None."""
    fields, shape = CONFIG_SHAPED.get(name, ((), None))
    config = getattr(module, "config", None)
    values = [getattr(config, f, None) for f in fields]
    if shape is None or not all(isinstance(v, int) for v in values):
        return None
    return shape(*values)  # type: ignore[operator]


def _image_shaped(module: nn.Module, param: inspect.Parameter) -> Optional[tuple[Axis, ...]]:
    """(batch, channels, height, width) for the first argument of a module whose stem is a convolution."""
    image = image_input(module)
    first = next(iter(_forward_parameters(module)), None)
    return ("batch", *image) if image is not None and param.name == first else None


def _choose(
    module: nn.Module, params: dict[str, inspect.Parameter], hints: dict[str, object], names: Optional[list[str]], cross: bool
) -> list[str]:
    label = type(module).__name__
    if names:
        unknown = [n for n in names if n not in params]
        if unknown:
            raise UsageError(f"{label}.forward has no argument {unknown[0]!r} (arguments: {', '.join(params)})")
        return list(names)
    chosen = [n for n, p in params.items() if p.default is inspect.Parameter.empty]
    if not chosen:  # every argument optional (transformers): the first input, and the decoder's when there is one
        primary = [n for n in params if n in CONFIG_SHAPED and config_shaped(module, n) is not None]
        chosen = (primary or [n for n in params if _is_tensor(n, hints) and n not in CONFIG_SHAPED])[:1]
        chosen += [n for n in DECODER_INPUTS if n in params and chosen and n not in chosen]
    if cross:
        extra = [n for n in params if n not in chosen and _is_cross(n, hints)]
        if not extra and not any("seq_k" in _named_axes(n, hints) for n in chosen):
            raise UsageError(f"--cross: {label}.forward has no argument along seq_k (keys, values)")
        chosen += extra
    if not chosen:
        raise UsageError(f"{label}.forward takes no tensor argument prove can build; name them with --inputs")
    return chosen


def _named_axes(name: str, hints: dict[str, object]) -> set[str]:
    """The axis names of an argument: from its annotation, else from its well-known name."""
    spec = spec_of(hints.get(name))
    if spec is None:
        return set(KNOWN_ARGUMENTS.get(name, ((), ""))[0])
    return {canonical(d.name) for d in spec.dims if d.kind in (NAMED, VARIADIC)}


def _is_cross(name: str, hints: dict[str, object]) -> bool:
    """A float argument along ``seq_k``: the keys and values of cross-attention."""
    kind = _kind(spec_of(hints.get(name)), name)
    return "seq_k" in _named_axes(name, hints) and kind == "float"


def _kind(spec: Optional[ArraySpec], name: str) -> str:
    if spec is None or spec.dtypes is None:
        return KNOWN_ARGUMENTS.get(name, ((), "float"))[1]
    if torch.float32 in spec.dtypes:
        return "float"
    if torch.int64 in spec.dtypes:
        return "int"
    return "bool" if torch.bool in spec.dtypes else "float"


def _argument(module: nn.Module, param: inspect.Parameter, hint: object, static: dict[str, int]) -> Argument:
    spec = spec_of(hint)
    where = f"{type(module).__name__}.forward argument {param.name!r}"
    shaped = (config_shaped(module, param.name) or _image_shaped(module, param)) if spec is None else None
    if spec is not None:
        axes = tuple(_axis(d, static, where, spec.text) for d in spec.dims)
    elif shaped is not None:
        axes = shaped
    elif param.name in KNOWN_ARGUMENTS:
        axes = tuple(a if a in DYNAMIC_AXES else _static(a, static, where) for a in KNOWN_ARGUMENTS[param.name][0])
    else:
        raise UsageError(f"{where} has no jaxtyping annotation, so its shape is unknown; annotate it, "
                         f"or pass other arguments with --inputs")
    kind = "float" if shaped is not None else _kind(spec, param.name)
    return Argument(param.name, axes, kind, param.default is inspect.Parameter.empty)


def _axis(dim: object, static: dict[str, int], where: str, text: str) -> Axis:
    kind, name = dim.kind, canonical(dim.name)  # type: ignore[attr-defined]
    if kind == FIXED:
        return dim.size  # type: ignore[attr-defined]
    if kind in (NAMED, VARIADIC) and name in DYNAMIC_AXES:
        return name
    if kind == NAMED:
        return _static(name, static, where)
    if kind == EXPR:
        try:
            return int(eval(dim.name, {"__builtins__": {}}, dict(static)))  # noqa: S307 - annotation text
        except Exception:  # noqa: BLE001
            pass
    shown = {ANON: "_", ANON_VARIADIC: "...", VARIADIC: f"*{dim.name}"}.get(kind, dim.name)  # type: ignore[attr-defined]
    raise UsageError(f"{where}: cannot size axis {shown!r} of \"{text}\"; give it with --size NAME=N")


def _static(name: str, static: dict[str, int], where: str) -> int:
    if name not in static:
        known = ", ".join(f"{k}={v}" for k, v in static.items()) or "none"
        raise UsageError(f"{where}: no size for axis {name!r} (known: {known}); give it with --size {name}=N")
    return static[name]
