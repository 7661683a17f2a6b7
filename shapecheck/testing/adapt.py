"""Calling conventions of real attention modules: how to feed them and how to read their outputs.

``read_signature(module)`` reads ``forward``'s parameters by role (``shapecheck.vocabulary``):
the query, key and value or one cross-attention memory, the mask, causal and weights
flags, positional inputs (rotary cos/sin, ``freqs_cis``, ``position_ids``, ALiBi, position
biases), caches (switched off) and the layout. ``shapecheck.testing.probe.discover`` then
settles what the names leave open with probe calls. ``call(module, convention, ...)``
always takes and returns batch-first tensors with a (batch, seq_k) key mask, True = visible,
and builds every positional input for the positions of the tokens passed.
"""

from __future__ import annotations

import inspect
import re
import weakref
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, Optional

import torch
from jaxtyping import Bool, Float
from torch import Tensor, nn

from shapecheck.errors import UsageError
from shapecheck import target
from shapecheck.testing import positions as pos
from shapecheck.vocabulary import (
    CONSTRUCTOR_ROLES, FORWARD_ROLES, MASK_CONVENTIONS, MASK_TEXT, ROTARY_HALVES, canonical, forward_role, pick,
)

MaskKind = Literal["keep", "ignore", "additive", "keep_float"]
MaskOption = Literal["auto", "keep", "ignore", "additive", "keep_float", "none"]
Layout = Literal["batch-first", "seq-first"]
MASK_SHAPES = ("b1ts", "b11s", "bs", "bts", "ts")  # tried in this order by the probe; "ts": torch's 2-D (seq_q, seq_k) attn_mask
POSITIONAL_ROLES = ("positions", "cache_position", "rotary", "alibi", "position_bias")
SUPPLIED_ROLES = POSITIONAL_ROLES + ("residual", "start_pos")  # built for each call
OFF_ROLES = {"use_cache": False, "cache": None, "head_mask": None, "encoder_mask": None}  # caches off, no extra masks


@dataclass(frozen=True)
class Convention:
    """How to call one module class; ``notes`` says what was chosen and why (printed by the CLI)."""

    query_name: str
    key_name: Optional[str] = None  # with value_name: forward(query, key, value)
    value_name: Optional[str] = None
    memory_name: Optional[str] = None  # required cross-attention memory (TransformerDecoderLayer's memory)
    optional_memory: Optional[str] = None  # an optional one (encoder_hidden_states, key_value_states): the cross_attention property
    keys_required: bool = False  # forward(q, k, v) with no defaults: self-attention passes x three times
    self_only: bool = False  # forward(q, k, v) of a causal module that refuses keys of another length: self-attention
    mask_name: Optional[str] = None
    mask_kind: Optional[MaskKind] = None
    mask_shape: str = "b1ts"
    mask_required: bool = False  # no default: an all-visible mask when a call has no key mask
    causal_in_mask: bool = False  # a decoder taking transformers-style 4-D masks: the causal triangle goes in the mask
    mask_window: Optional[int] = None  # with it, the config's sliding window
    causal_name: Optional[str] = None
    causal_always: bool = False  # --causal, or detected: the module is causal without a flag
    weights_name: Optional[str] = None
    returns_weights: bool = False
    batch_first: bool = True  # the layout calls use: --layout, else the module's batch_first, else its annotation
    behaves_batch_first: Optional[bool] = None  # the layout in which batch items stay independent (None: the probe cannot tell)
    mask_by: str = "name"  # how mask_kind was decided: "name", "behaviour", "--mask", "contract" (--strict keeps a padding mask's)
    supplied: dict[str, str] = field(default_factory=dict)  # argument -> role, built per call (positions, rotary, ...)
    rotary_share: Fraction = Fraction(1)  # of each head a supplied rotary table covers (partial rotary: 1/4 in GPT-NeoX)
    extra: dict[str, Any] = field(default_factory=dict)  # constants: use_cache=False, average_attn_weights=False
    notes: tuple[str, ...] = ()
    could_not_run: Optional[str] = None  # why no ordinary call worked (reported once, exit 2)

    @property
    def cross(self) -> bool:
        if self.self_only:
            return False
        return self.memory_name is not None or (self.key_name is not None and self.value_name is not None)

    @property
    def positional(self) -> Optional[str]:
        """The positional input this module takes ('rotary', 'alibi', 'positions', 'position_bias'), or None."""
        roles = set(self.supplied.values())
        return next((r for r in ("rotary", "alibi", "position_bias", "positions") if r in roles), None)


@dataclass(frozen=True)
class Outcome:
    """A call's result read back batch-first: the output and the attention weights when returned."""

    output: Float[Tensor, "batch seq_q d_model"]
    weights: Optional[Float[Tensor, "batch *heads seq_q seq_k"]] = None


# ---------------------------------------------------------------- signature reading


def forward_parameters(module: nn.Module) -> list[inspect.Parameter]:
    """``forward``'s named parameters (no ``*args``/``**kwargs``); a ``UsageError`` when it has no readable signature."""
    params = target.forward_parameters(module)
    if params is None:
        raise UsageError(f"{type(module).__name__}.forward has no readable signature")
    return params


def _guess_kind(module: nn.Module, name: str) -> MaskKind:
    """The name's usual convention; inside transformers-style layers ``attention_mask`` is additive."""
    if name in ("attention_mask", "mask") and takes_transformers_masks(module):
        return "additive"
    return MASK_CONVENTIONS.get(name, "keep")


def takes_transformers_masks(module: nn.Module) -> bool:
    """A transformers-style layer: a config with an attention implementation, or a class of the transformers package."""
    config = getattr(module, "config", None)
    return type(module).__module__.startswith("transformers.") or hasattr(config, "_attn_implementation")


def _queries_keys_values(params: list[inspect.Parameter]) -> tuple[str, Optional[str], Optional[str], Optional[str]]:
    names = [p.name for p in params]
    positional = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    query = pick(names, "query") or positional[0].name
    rest = [n for n in names if n != query]
    key, value = pick(rest, "key"), pick(rest, "value")
    required = {p.name for p in params if p.default is inspect.Parameter.empty}
    if key is None and value is None and len(positional) >= 3 and positional[0].name == query:
        unnamed = forward_role(positional[1].name) is None and forward_role(positional[2].name) is None
        if unnamed and {positional[1].name, positional[2].name} <= required:  # forward(a, b, c) with no defaults: q, k, v
            key, value = positional[1].name, positional[2].name
    if not (key and value):
        key = value = None
    memory = pick(rest, "memory") if key is None else None
    return query, key, value, memory


def read_signature(module: nn.Module, *, mask: MaskOption = "auto", layout: Optional[Layout] = None, causal: bool = False) -> Convention:
    """The convention implied by ``forward``'s parameter names (before any probe call)."""
    params = forward_parameters(module)
    if not params:
        raise UsageError(f"{type(module).__name__}.forward takes no tensor argument")
    names = [p.name for p in params]
    required = {p.name for p in params if p.default is inspect.Parameter.empty}
    query, key, value, memory = _queries_keys_values(params)
    mask_name = None if mask == "none" else _mask_name(names, memory if memory in required else None)
    supplied = {n: r for n in names if (r := forward_role(n)) in SUPPLIED_ROLES and (r not in ("residual", "start_pos") or n in required)}
    extra = {n: OFF_ROLES[r] for n in names if (r := forward_role(n)) in OFF_ROLES and n != mask_name}
    if "average_attn_weights" in names:
        extra["average_attn_weights"] = False
    known = {query, key, value, memory, mask_name, *supplied, *extra, pick(names, "causal"), pick(names, "weights")}
    unknown = sorted(required - known)
    if unknown:
        raise UsageError(f"{type(module).__name__}.forward requires {', '.join(unknown)}, which verify cannot supply "
                         f"(it supplies: {', '.join(sorted(FORWARD_ROLES))})")
    kind = None if mask_name is None else (_guess_kind(module, mask_name) if mask == "auto" else mask)
    optional = memory if memory is not None and memory not in required else None
    memory = None if optional else memory
    batch_first = _batch_first(module, layout)
    return Convention(
        query_name=query, key_name=key, value_name=value, memory_name=memory, optional_memory=optional, keys_required=bool(required & {key, value, memory}),
        mask_name=mask_name, mask_kind=kind, mask_required=mask_name in required, causal_name=pick(names, "causal"),
        causal_always=causal, weights_name=pick(names, "weights"), batch_first=batch_first, supplied=supplied, extra=extra,
        mask_by="name" if mask == "auto" else "--mask",
        notes=_notes(query, key, value, memory, optional, mask_name, kind, mask, batch_first, layout, supplied),
    )


def _mask_name(names: list[str], memory: Optional[str]) -> Optional[str]:
    """The key mask: for cross-attention from a memory tensor, the memory's padding mask where there is one."""
    if memory is not None:
        own = next((n for n in ("memory_key_padding_mask", "encoder_attention_mask", "context_mask") if n in names), None)
        if own is not None:
            return own
    return pick(names, "mask")


def _notes(query: str, key: Optional[str], value: Optional[str], memory: Optional[str], optional: Optional[str], mask_name: Optional[str],
           kind: Optional[MaskKind], mask: MaskOption, batch_first: bool, layout: Optional[Layout], supplied: dict[str, str]) -> tuple[str, ...]:
    if key:
        first = f"forward: query={query}, key={key}, value={value}"
    elif memory:
        first = f"forward: query={query}, memory={memory} (cross-attention, seq_k != seq_q)"
    elif optional:
        first = f"forward: query={query} (self-attention; the optional memory {optional} is not passed)"
    else:
        first = f"forward: query={query} (self-attention only)"
    if mask_name is not None and kind is not None:
        second = f"mask: {mask_name} ({MASK_TEXT[kind]})"
    else:
        second = "mask: none" + (" (--mask none)" if mask == "none" else " (no mask argument)")
    notes = [first, second, f"layout: {'batch-first' if batch_first else 'seq-first'}" + ("" if layout else " (auto: batch_first, annotations)")]
    if supplied:
        notes.append("supplied: " + ", ".join(f"{n} ({r})" for n, r in supplied.items()))
    return tuple(notes)


def _batch_first(module: nn.Module, layout: Optional[Layout]) -> bool:
    """--layout, else the module's (or its first attention submodule's) ``batch_first``, else its annotation, else batch-first."""
    if layout is not None:
        return layout == "batch-first"
    flag = next((m.batch_first for m in module.modules() if isinstance(getattr(m, "batch_first", None), bool)), None)
    if isinstance(flag, bool):
        return flag
    return _annotated_layout(module) != "seq-first"


def _annotated_layout(module: nn.Module) -> Optional[Layout]:
    params = forward_parameters(module)
    annotation = params[0].annotation if params else None
    text = annotation if isinstance(annotation, str) else str(getattr(annotation, "dim_str", "") or annotation)
    found = re.search(r"[\"']([^\"']+)[\"']", text)
    axes = [canonical(a.lstrip("#*")) for a in (found.group(1).split() if found else [])]
    if len(axes) >= 2 and axes[0] in ("seq", "seq_q", "seq_k") and axes[1] == "batch":
        return "seq-first"
    return None


# ---------------------------------------------------------------- masks


def mask_tensor(keep: Tensor, kind: MaskKind, shape: str, seq_q: int, dtype: torch.dtype,
                allowed: Optional[Bool[Tensor, "batch seq_q seq_k"]] = None) -> Tensor:
    """A (batch, seq_k) keep mask (or a full ``allowed`` matrix) in the module's convention and shape."""
    batch, seq_k = keep.shape
    full = allowed if allowed is not None else keep[:, None, :].expand(batch, seq_q, seq_k)  # (batch, seq_q, seq_k)
    if kind == "keep":
        value = full
    elif kind == "ignore":
        value = ~full
    elif kind == "keep_float":
        value = full.to(dtype)
    else:
        value = torch.zeros(full.shape, dtype=dtype).masked_fill(~full, torch.finfo(dtype).min)
    if shape == "b1ts":
        return value[:, None]  # (batch, 1, seq_q, seq_k)
    if shape == "bts":
        return value  # (batch, seq_q, seq_k)
    if shape == "b11s":
        return value[:, None, :1]  # (batch, 1, 1, seq_k)
    if shape == "ts":
        return value[0]  # (seq_q, seq_k): one mask for the batch (``call`` runs items whose masks differ one by one)
    return value[:, 0]  # (batch, seq_k)


def _allowed(conv: Convention, keep: Tensor, q_pos: Tensor, k_pos: Tensor) -> Optional[Tensor]:
    """The (batch, seq_q, seq_k) matrix with the causal triangle (by position) for decoders taking 4-D masks."""
    if not conv.causal_in_mask:
        return None
    triangle = k_pos[None, :] <= q_pos[:, None]  # (seq_q, seq_k)
    if conv.mask_window is not None:
        triangle = triangle & (k_pos[None, :] > q_pos[:, None] - conv.mask_window)  # a sliding window, as the model's mask has it
    return keep[:, None, :] & triangle[None]


# ---------------------------------------------------------------- calling


_ROTARY: "weakref.WeakKeyDictionary[nn.Module, Optional[nn.Module]]" = weakref.WeakKeyDictionary()


def _rotary_of(module: nn.Module) -> Optional[nn.Module]:
    if module not in _ROTARY:
        _ROTARY[module] = pos.own_rotary(module)
    return _ROTARY[module]


def window_of(module: nn.Module) -> Optional[int]:
    """The sliding window the module (or its config) declares, or None."""
    return module_size(module, "window")


def module_size(module: nn.Module, role: str) -> Optional[int]:
    """An integer attribute of the module (or its config) named for ``role`` in the vocabulary (``num_heads``, ``head_dim``)."""
    for owner in (module, getattr(module, "config", None)):
        for name in sorted(CONSTRUCTOR_ROLES[role]):
            value = getattr(owner, name, None) if owner is not None else None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def inner_size(module: nn.Module, role: str) -> Optional[int]:
    """``module_size`` of the first submodule that declares ``role`` (a decoder layer's ``self_attn``), or None."""
    return next((found for sub in module.modules() if sub is not module and (found := module_size(sub, role))), None)


@dataclass(frozen=True)
class Sizes:
    """What positional inputs need: heads and head size (from the drawn case, else the module's attributes)."""

    heads: Optional[int] = None
    d_head: Optional[int] = None


def supply(module: nn.Module, conv: Convention, role: str, name: str, query: Tensor, q_pos: Tensor, k_pos: Tensor, sizes: Sizes) -> Any:
    heads = sizes.heads or module_size(module, "heads") or inner_size(module, "heads") or 1
    d_head = sizes.d_head or module_size(module, "d_head") or inner_size(module, "d_head") or query.size(-1) // heads
    if role == "positions":
        return q_pos[None].expand(query.size(0), -1)
    if role == "start_pos":
        return int(q_pos[0]) if q_pos.numel() else 0
    if role == "cache_position":
        return q_pos
    d_rotary = int(d_head * conv.rotary_share)  # floored, as partial rotary modules size their tables
    if role == "rotary" and name == "freqs_cis":
        return pos.freqs_cis(q_pos, d_rotary)
    if role == "rotary":
        table = pos.rotary_cos_sin(_rotary_of(module), q_pos, d_rotary, query)
        return table[ROTARY_HALVES[name]] if name in ROTARY_HALVES else table
    if role == "alibi":
        return pos.alibi(k_pos, heads, query.size(0), query.dtype)
    if role == "position_bias":
        bias = pos.relative_bias(module, q_pos, k_pos)
        return bias if bias is not None else torch.zeros(1, heads, q_pos.numel(), k_pos.numel(), dtype=query.dtype)
    if role == "residual":
        return torch.zeros_like(_layout_in(query, conv.batch_first))
    return 0


def _layout_in(x: Tensor, batch_first: bool) -> Tensor:
    return x if batch_first else x.transpose(0, 1)  # (seq, batch, d_model)


def arguments(module: nn.Module, conv: Convention, query: Tensor, key: Optional[Tensor] = None, value: Optional[Tensor] = None, *,
              keep: Optional[Tensor] = None, causal: bool = False, weights: bool = False, positions: Optional[Tensor] = None,
              sizes: Sizes = Sizes(), key_positions: Optional[Tensor] = None) -> dict[str, Any]:
    """The keyword arguments of one call (batch-first inputs in, the module's layout and conventions out).

    ``key_positions`` (decoding with a cache) are the positions of every key, cached ones included.
    """
    kwargs: dict[str, Any] = dict(conv.extra)
    kwargs[conv.query_name] = _layout_in(query, conv.batch_first)
    source = query if key is None else key
    if conv.memory_name is not None and (key is not None or conv.keys_required):
        kwargs[conv.memory_name] = _layout_in(source, conv.batch_first)
    elif conv.key_name and conv.value_name and (key is not None or conv.keys_required):
        kwargs[conv.key_name] = _layout_in(source, conv.batch_first)
        kwargs[conv.value_name] = _layout_in(source if value is None else value, conv.batch_first)
    q_pos = torch.arange(query.size(1)) if positions is None else positions
    k_pos = key_positions if key_positions is not None else (torch.arange(source.size(1)) if conv.cross else q_pos)
    if keep is None and (conv.mask_required or conv.causal_in_mask) and conv.mask_name is not None:
        keep = torch.ones(query.size(0), k_pos.numel(), dtype=torch.bool)  # all visible
    if keep is not None:
        if conv.mask_name is None or conv.mask_kind is None:
            raise UsageError(f"{type(module).__name__} takes no mask argument")
        allowed = _allowed(conv, keep, q_pos, k_pos)
        kwargs[conv.mask_name] = mask_tensor(keep, conv.mask_kind, conv.mask_shape, query.size(1), query.dtype, allowed)
    for name, role in conv.supplied.items():
        kwargs[name] = supply(module, conv, role, name, query, q_pos, k_pos, sizes)
    if conv.causal_name is not None:
        kwargs[conv.causal_name] = causal
    if conv.weights_name is not None:
        kwargs[conv.weights_name] = weights
    return kwargs


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
    positions: Optional[Tensor] = None,
    sizes: Sizes = Sizes(),
) -> Outcome:
    """Call ``module`` with batch-first inputs and a (batch, seq_k) keep mask; read the outcome back batch-first.

    ``positions`` (1-D, default ``arange(seq_q)``) are the query tokens' positions for every positional input.
    """
    if keep is not None and conv.mask_shape == "ts" and conv.mask_name is not None and keep.size(0) > 1 and not bool((keep == keep[:1]).all()):
        parts = [call(module, conv, query[i:i + 1], None if key is None else key[i:i + 1], None if value is None else value[i:i + 1],
                      keep=keep[i:i + 1], causal=causal, weights=weights, positions=positions, sizes=sizes) for i in range(keep.size(0))]
        found = [p.weights for p in parts]
        return Outcome(torch.cat([p.output for p in parts]), None if any(w is None for w in found) else torch.cat(found))  # type: ignore[misc]
    kwargs = arguments(module, conv, query, key, value, keep=keep, causal=causal, weights=weights, positions=positions, sizes=sizes)
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


def _heads(t: Tensor, batch: int) -> int:
    return t.size(0) // batch if batch and t.dim() == 3 and t.size(0) % batch == 0 else 1


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
    batch = output.size(0) if output.dim() else 0
    found = [t for t in tensors[1:] if t.dim() in (3, 4) and tuple(t.shape[-2:]) == (seq_q, seq_k) and t.size(0) in (batch, batch * _heads(t, batch))]
    weights = found[-1] if found else None  # the last: T5 returns its position bias (batch 1) before the weights
    return Outcome(output, weights)
