"""Calling conventions of real attention modules: how to feed them and how to read their outputs.

``discover(module, ...)`` reads ``forward``'s signature (self- or cross-attention,
the mask argument and its convention, causal and weights flags), the layout
(``batch_first`` where the module has one) and, with one probe call, the mask
shape the module accepts and whether it returns attention weights.
``call(module, convention, ...)`` then always takes and returns batch-first
tensors with a (batch, seq_k) key mask, True = visible.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Optional, Union

import torch
from jaxtyping import Bool, Float
from torch import Tensor, nn

from shapecheck.axes import canonical
from shapecheck.errors import UsageError
from shapecheck.vocabulary import FORWARD_ROLES, MASK_TEXT

MaskKind = Literal["keep", "ignore", "additive"]
MaskOption = Literal["auto", "keep", "ignore", "additive", "none"]
Layout = Literal["batch-first", "seq-first"]

QUERY_NAMES = FORWARD_ROLES["query"]
KEY_NAMES = FORWARD_ROLES["key"] + FORWARD_ROLES["memory"]
VALUE_NAMES = FORWARD_ROLES["value"]
MASK_NAMES = FORWARD_ROLES["mask"]
CAUSAL_NAMES = FORWARD_ROLES["causal"]
WEIGHTS_NAMES = FORWARD_ROLES["weights"]
MASK_SHAPES = ("b1ts", "b11s", "bs", "bts")  # tried in this order by the probe


@dataclass(frozen=True)
class Convention:
    """How to call one module class; ``notes`` says what was chosen and why (printed by the CLI)."""

    query_name: str
    key_name: Optional[str] = None  # None: self-attention only
    value_name: Optional[str] = None
    keys_required: bool = False  # forward(q, k, v) with no defaults: self-attention passes x three times
    mask_name: Optional[str] = None
    mask_kind: Optional[MaskKind] = None
    mask_shape: str = "b1ts"
    causal_name: Optional[str] = None
    causal_always: bool = False  # --causal: the module is causal without a flag
    weights_name: Optional[str] = None
    returns_weights: bool = False
    batch_first: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def cross(self) -> bool:
        return self.key_name is not None and self.value_name is not None


@dataclass(frozen=True)
class Outcome:
    """A call's result read back batch-first: the output and the attention weights when returned."""

    output: Float[Tensor, "batch seq_q d_model"]
    weights: Optional[Float[Tensor, "batch *heads seq_q seq_k"]] = None


# ---------------------------------------------------------------- signature reading


def _forward_parameters(module: nn.Module) -> list[inspect.Parameter]:
    try:
        params = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        raise UsageError(f"{type(module).__name__}.forward has no readable signature") from None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in params if p.kind in kinds]


def _pick(names: list[str], candidates: tuple[str, ...]) -> Optional[str]:
    return next((c for c in candidates if c in names), None)


def _auto_mask_kind(module: nn.Module, name: str) -> MaskKind:
    if name in ("key_padding_mask", "src_key_padding_mask", "padding_mask", "attn_mask"):
        return "ignore"  # torch's convention: True = padding / not allowed
    if name == "attention_mask" and type(module).__module__.startswith("transformers."):
        return "additive"  # inside Hugging Face layers the mask is already additive
    return "keep"  # mask / attention_mask: True or 1 = may attend


def read_signature(module: nn.Module, *, mask: MaskOption = "auto", layout: Optional[Layout] = None, causal: bool = False) -> Convention:
    """The convention implied by ``forward``'s parameter names (before any probe call)."""
    params = _forward_parameters(module)
    names = [p.name for p in params]
    if not params:
        raise UsageError(f"{type(module).__name__}.forward takes no tensor argument")
    positional = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    query_name = _pick(names, QUERY_NAMES) or positional[0].name
    rest = [n for n in names if n != query_name]
    key_name, value_name = _pick(rest, KEY_NAMES), _pick(rest, VALUE_NAMES)
    required = {p.name for p in params if p.default is inspect.Parameter.empty}
    if key_name is None and value_name is None and len(positional) >= 3 and positional[0].name == query_name:
        if {positional[1].name, positional[2].name} <= required:  # forward(a, b, c) with no defaults: q, k, v
            key_name, value_name = positional[1].name, positional[2].name
    mask_name = None if mask == "none" else _pick(names, MASK_NAMES)
    known = {query_name, key_name, value_name}
    unknown = sorted(required - known)
    if unknown:
        raise UsageError(f"{type(module).__name__}.forward requires {', '.join(unknown)}, which verify cannot supply")
    notes = [f"forward: query={query_name}" + (f", key={key_name}, value={value_name}" if key_name else " (self-attention only)")]
    mask_kind = None
    if mask_name is not None:
        mask_kind = _auto_mask_kind(module, mask_name) if mask == "auto" else mask
        notes.append(f"mask: {mask_name} ({_KIND_TEXT[mask_kind]})")
    else:
        notes.append("mask: none" + (" (--mask none)" if mask == "none" else " (no mask argument)"))
    batch_first = _batch_first(module, layout)
    notes.append(f"layout: {'batch-first' if batch_first else 'seq-first'}" + ("" if layout else " (auto: batch_first, annotations)"))
    return Convention(
        query_name=query_name, key_name=key_name if value_name else None, value_name=value_name if key_name else None,
        keys_required=bool(required & {key_name, value_name}), mask_name=mask_name, mask_kind=mask_kind,
        causal_name=_pick(names, CAUSAL_NAMES), causal_always=causal, weights_name=_pick(names, WEIGHTS_NAMES),
        batch_first=batch_first, extra={"average_attn_weights": False} if "average_attn_weights" in names else {},
        notes=tuple(notes),
    )


_KIND_TEXT = MASK_TEXT


def _batch_first(module: nn.Module, layout: Optional[Layout]) -> bool:
    """--layout, else the module's ``batch_first``, else the query annotation ("seq batch d_model"), else batch-first."""
    if layout is not None:
        return layout == "batch-first"
    flag = getattr(module, "batch_first", None)
    if isinstance(flag, bool):
        return flag
    return _annotated_layout(module) != "seq-first"


def _annotated_layout(module: nn.Module) -> Optional[Layout]:
    params = _forward_parameters(module)
    annotation = params[0].annotation if params else None
    text = annotation if isinstance(annotation, str) else str(getattr(annotation, "dim_str", "") or annotation)
    found = re.search(r"[\"']([^\"']+)[\"']", text)
    axes = [canonical(a.lstrip("#*")) for a in (found.group(1).split() if found else [])]
    if len(axes) >= 2 and axes[0] in ("seq", "seq_q", "seq_k") and axes[1] == "batch":
        return "seq-first"
    return None


# ---------------------------------------------------------------- calling


def mask_tensor(keep: Tensor, kind: MaskKind, shape: str, seq_q: int, dtype: torch.dtype) -> Tensor:
    """A (batch, seq_k) keep mask in the module's convention and shape."""
    if kind == "keep":
        value = keep
    elif kind == "ignore":
        value = ~keep
    else:
        value = torch.zeros(keep.shape, dtype=dtype).masked_fill(~keep, torch.finfo(dtype).min)
    batch, seq_k = keep.shape
    if shape == "b1ts":
        return value[:, None, None, :].expand(batch, 1, seq_q, seq_k)  # (batch, 1, seq_q, seq_k)
    if shape == "b11s":
        return value[:, None, None, :]  # (batch, 1, 1, seq_k)
    if shape == "bts":
        return value[:, None, :].expand(batch, seq_q, seq_k)  # (batch, seq_q, seq_k)
    return value  # (batch, seq_k)


def _layout_in(x: Tensor, batch_first: bool) -> Tensor:
    return x if batch_first else x.transpose(0, 1)  # (seq, batch, d_model)


def call(
    module: nn.Module,
    conv: Convention,
    query: Tensor,
    key: Optional[Tensor] = None,
    value: Optional[Tensor] = None,
    *,
    keep: Optional[Bool[Tensor, "batch seq_k"]] = None,
    causal: bool = False,
    weights: bool = False,
) -> Outcome:
    """Call ``module`` with batch-first inputs and a (batch, seq_k) keep mask; read the outcome back batch-first."""
    kwargs: dict[str, Any] = dict(conv.extra)
    kwargs[conv.query_name] = _layout_in(query, conv.batch_first)
    if conv.cross and (key is not None or conv.keys_required):
        kwargs[conv.key_name] = _layout_in(query if key is None else key, conv.batch_first)
        kwargs[conv.value_name] = _layout_in((query if key is None else key) if value is None else value, conv.batch_first)
    if keep is not None:
        if conv.mask_name is None or conv.mask_kind is None:
            raise UsageError(f"{type(module).__name__} takes no mask argument")
        kwargs[conv.mask_name] = mask_tensor(keep, conv.mask_kind, conv.mask_shape, query.size(1), query.dtype)
    if conv.causal_name is not None:
        kwargs[conv.causal_name] = causal
    if conv.weights_name is not None:
        kwargs[conv.weights_name] = weights
    result = module(**kwargs)
    return read_outcome(result, conv.batch_first, query.size(1), (key if key is not None else query).size(1))


_OUTPUT_KEYS = ("output", "attn_output", "last_hidden_state", "hidden_states", "context")
_WEIGHT_KEYS = ("attentions", "attn_weights", "attention_weights", "weights", "attention_probs", "probs")


def _tensors(items: Any) -> list[Tensor]:
    found = []
    for item in items:
        if isinstance(item, Tensor):
            found.append(item)
        elif isinstance(item, (tuple, list)) and item and isinstance(item[-1], Tensor):
            found.append(item[-1])  # per-layer tuples: the last layer
    return found


def read_outcome(result: Any, batch_first: bool, seq_q: int, seq_k: int) -> Outcome:
    """The first tensor is the output; a later one ending in (seq_q, seq_k) is the weights."""
    if isinstance(result, dict):
        ordered = [result[k] for k in _OUTPUT_KEYS if result.get(k) is not None]
        ordered += [result[k] for k in _WEIGHT_KEYS if result.get(k) is not None]
        ordered += [v for k, v in result.items() if k not in _OUTPUT_KEYS + _WEIGHT_KEYS]
        tensors = _tensors(ordered)
    elif isinstance(result, (tuple, list)):
        tensors = _tensors(result)
    else:
        tensors = _tensors([result])
    if not tensors:
        raise TypeError(f"forward returned {type(result).__name__} with no tensor in it")
    output = tensors[0] if batch_first or tensors[0].dim() < 2 else tensors[0].transpose(0, 1)
    weights = next((t for t in tensors[1:] if t.dim() in (3, 4) and tuple(t.shape[-2:]) == (seq_q, seq_k)), None)
    return Outcome(output, weights)


# ---------------------------------------------------------------- probing


def discover(
    module: nn.Module, d_model: int, *, mask: MaskOption = "auto", layout: Optional[Layout] = None, causal: bool = False
) -> Convention:
    """``read_signature`` plus probe calls: the accepted mask shape, a usable causal flag, returned weights.

    The probe uses batch=3, seq_q=4, seq_k=5 so broadcasting mistakes do not pass
    by accident. A module that raises on the probe is not a usage error: the
    properties will report the same failure with a minimal input.
    """
    conv = read_signature(module, mask=mask, layout=layout, causal=causal)
    gen = torch.Generator().manual_seed(0)
    query = torch.randn(3, 4, d_model, generator=gen)  # (batch, seq_q, d_model)
    key = torch.randn(3, 5, d_model, generator=gen) if conv.cross else query  # (batch, seq_k, d_model)
    plain = _attempt(module, conv, query, key)
    if isinstance(plain, str):
        conv = replace(conv, notes=conv.notes + (f"probe: the plain call {plain}",))
    conv = _probe_mask(module, conv, query, key)
    if not isinstance(plain, str):
        conv = _probe_causal(module, conv, query)
    if not isinstance(plain, str) and conv.causal_name is None and not conv.causal_always and _looks_causal(module, conv, query):
        conv = replace(conv, causal_always=True, notes=conv.notes + ("causal: the first output ignores later tokens; treated as --causal",))
    return _probe_weights(module, conv, query, key)


def _looks_causal(module: nn.Module, conv: Convention, query: Tensor) -> bool:
    """Self-attention whose first output ignores later tokens while later outputs depend on earlier ones."""
    edited = query.clone()
    edited[:, 1:] = edited[:, 1:].flip(0) * 2 + 1  # change every token after the first
    first, second = _attempt(module, conv, query, query), _attempt(module, conv, edited, edited)
    start = query.clone()
    start[:, 0] = start[:, 0] * -2 + 1  # change only the first token
    third = _attempt(module, conv, start, start)
    if any(isinstance(o, str) for o in (first, second, third)):
        return False
    same_first = torch.allclose(first.output[:, 0], second.output[:, 0], atol=1e-5)  # type: ignore[union-attr]
    last_moves = not torch.allclose(first.output[:, -1], third.output[:, -1], atol=1e-5)  # type: ignore[union-attr]
    return same_first and last_moves


def _attempt(module: nn.Module, conv: Convention, query: Tensor, key: Tensor, **kw: Any) -> Union[Outcome, str]:
    """The outcome, or 'raised Error: message' (with gradients on, as the properties run)."""
    cross = key if conv.cross else None
    try:
        return call(module, conv, query, cross, cross, **kw)
    except Exception as error:  # noqa: BLE001 - a module may raise anything
        lines = str(error).strip().splitlines()
        return f"raised {type(error).__name__}: {lines[0] if lines else ''}"[:200]


def _probe_mask(module: nn.Module, conv: Convention, query: Tensor, key: Tensor) -> Convention:
    """A padding mask is (batch, seq_k) by convention; other masks take the first shape the module accepts.

    When the probe finds none, the first shape stays: the properties then show the failure
    on a minimal input instead of silently skipping every mask test (``--mask none`` opts out).
    """
    if conv.mask_name is None:
        return conv
    if conv.mask_name in ("key_padding_mask", "src_key_padding_mask", "padding_mask"):
        return _with_shape(conv, "bs")
    keep = torch.ones(query.size(0), key.size(1), dtype=torch.bool)
    keep[:, -1] = False
    for shape in MASK_SHAPES:
        out = _attempt(module, replace(conv, mask_shape=shape), query, key, keep=keep)
        if not isinstance(out, str) and tuple(out.output.shape) == tuple(query.shape):
            return _with_shape(conv, shape)
    conv = _with_shape(conv, MASK_SHAPES[0])
    return replace(conv, notes=conv.notes + (f"mask: the probe found no shape {conv.mask_name} accepts; using the first",))


def _with_shape(conv: Convention, shape: str) -> Convention:
    notes = conv.notes[:1] + (f"{conv.notes[1]}, shape {_SHAPE_TEXT[shape]}",) + conv.notes[2:]
    return replace(conv, mask_shape=shape, notes=notes)


_SHAPE_TEXT = {"b1ts": "(batch, 1, seq_q, seq_k)", "b11s": "(batch, 1, 1, seq_k)", "bs": "(batch, seq_k)", "bts": "(batch, seq_q, seq_k)"}


def _probe_causal(module: nn.Module, conv: Convention, query: Tensor) -> Convention:
    if conv.causal_name is None:
        return conv
    out = _attempt(module, replace(conv, key_name=None, value_name=None) if not conv.keys_required else conv, query, query, causal=True)
    if isinstance(out, str):  # e.g. torch's is_causal is only a hint that needs attn_mask
        return replace(conv, causal_name=None, notes=conv.notes + (f"causal: {conv.causal_name}=True {out}; not used",))
    return replace(conv, notes=conv.notes + (f"causal flag: {conv.causal_name}",))


def _probe_weights(module: nn.Module, conv: Convention, query: Tensor, key: Tensor) -> Convention:
    out = _attempt(module, conv, query, key, weights=True)
    if isinstance(out, str) and conv.mask_name is not None:
        out = _attempt(module, conv, query, key, weights=True, keep=torch.ones(query.size(0), key.size(1), dtype=torch.bool))
    if isinstance(out, str) or out.weights is None:
        return replace(conv, notes=conv.notes + ("weights: not returned",))
    return replace(conv, returns_weights=True, notes=conv.notes + (f"weights: returned, shape {tuple(out.weights.shape)}",))
