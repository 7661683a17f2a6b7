"""Probe calls that settle what ``forward``'s names leave open.

``discover(module, d_model)`` starts from ``adapt.read_signature`` and, with a few calls on
batch=3, seq=4 inputs (seq_k=5 for a memory), finds: which positional inputs the module
needs (none, all but ALiBi, or all); whether it runs at all (``Convention.could_not_run``);
the layout by behaviour (the one in which batch items stay independent; recorded, calls keep the
declared one); the mask convention by behaviour (the convention under which a hidden key's contents
change no other row; a padding mask's name is a contract that only consistent behaviour overrides,
with a warning); the mask shape; a usable causal flag; causality by construction; returned weights.
A transformers-style decoder (``is_causal`` set, 4-D masks) gets the causal triangle in its mask.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any, Optional, Union

import torch
from torch import Tensor, nn

from shapecheck import errors
from shapecheck.testing.adapt import (
    MASK_SHAPES, Convention, Layout, MaskKind, MaskOption, Outcome, Sizes, arguments, call, forward_parameters, read_signature,
    takes_transformers_masks, window_of,
)
from shapecheck.testing.compare import diff
from shapecheck.testing.positions import describe
from shapecheck.vocabulary import MASK_TEXT, PADDING_MASKS

_SHAPE_TEXT = {"b1ts": "(batch, 1, seq_q, seq_k)", "b11s": "(batch, 1, 1, seq_k)", "bs": "(batch, seq_k)", "bts": "(batch, seq_q, seq_k)",
               "ts": "(seq_q, seq_k), one per call: items with other masks run one by one"}
_KINDS: tuple[MaskKind, ...] = ("keep", "ignore", "additive", "keep_float")


def first_line(error: BaseException) -> str:
    """``errors.first_line``, at most 200 characters (verify's messages sit in a table cell)."""
    return errors.first_line(error)[:200]


def attempt(module: nn.Module, conv: Convention, query: Tensor, key: Optional[Tensor] = None, **kw: Any) -> Union[Outcome, str]:
    """The outcome, or 'raised Error: message' (with gradients on, as the properties run)."""
    try:
        return call(module, conv, query, key if conv.cross else None, key if conv.cross else None, **kw)
    except Exception as error:  # noqa: BLE001 - a module may raise anything
        return "raised " + first_line(error)


def _inputs(conv: Convention, d_model: int) -> tuple[Tensor, Tensor]:
    gen = torch.Generator().manual_seed(0)
    query = torch.randn(3, 4, d_model, generator=gen)  # (batch, seq_q, d_model)
    key = torch.randn(3, 5, d_model, generator=gen) if conv.memory_name else query  # (batch, seq_k, d_model)
    return query, key


def discover(module: nn.Module, d_model: int, *, mask: MaskOption = "auto", layout: Optional[Layout] = None, causal: bool = False,
             sizes: Sizes = Sizes(), strict: bool = False) -> Convention:
    """``read_signature`` plus probe calls; ``could_not_run`` says why when no ordinary call works.

    ``strict`` (verify's ``--strict``): a padding mask whose behaviour contradicts its name's contract keeps the contract
    (so the properties fail on it) instead of following the behaviour with a warning.
    """
    conv = read_signature(module, mask=mask, layout=layout, causal=causal)
    query, key = _inputs(conv, d_model)
    conv = _causal_in_mask(module, conv)
    conv, plain = _choose_supplied(module, conv, query, key, sizes)
    if isinstance(plain, str) and conv.mask_name is not None and not conv.mask_required:
        unmasked, works = _choose_supplied(module, replace(conv, mask_name=None, causal_in_mask=False), query, key, sizes)
        if not isinstance(works, str):  # an optional mask refusing every convention and shape verify builds: dropped
            note = f"mask: {conv.mask_name} refused every mask verify builds ({plain}); not passed"
            kept = tuple(n for n in unmasked.notes if not n.startswith(f"mask: {conv.mask_name} ("))
            conv, plain = replace(unmasked, notes=kept + (note,)), works
    if isinstance(plain, str):  # a layout or length bug may only show at batch != seq: try the smallest call
        small, tiny = _choose_supplied(module, conv, query[:1, :1], key[:1, :1], sizes)
        if isinstance(tiny, str):
            return replace(conv, could_not_run=_could_not_run(module, conv, query, key, sizes, plain))
        conv = replace(small, notes=small.notes + (f"probe: the call at batch=3, seq=4 {plain}",))
    conv = _probe_layout(module, conv, query, key, sizes) if layout is None else conv
    conv = _probe_mask(module, conv, query, key, sizes, fixed=mask != "auto", strict=strict)
    conv = conv if mask != "auto" else _drop_switch_mask(module, conv, query, key, sizes)  # --mask X: the user's contract
    conv = _probe_causal(module, conv, query, sizes)
    if conv.causal_name is None and not conv.causal_always and _looks_causal(module, conv, query, sizes):
        conv = replace(conv, causal_always=True, notes=conv.notes + ("causal: the first output ignores later tokens; treated as --causal",))
    conv = _self_only(module, conv, query, sizes)
    return _probe_weights(module, conv, query, key, sizes)


def _self_only(module: nn.Module, conv: Convention, query: Tensor, sizes: Sizes) -> Convention:
    """A causal module with query, key and value arguments that refuses keys of another length is self-attention:
    causality between two sequences of different lengths is not defined, so its q/k/v are one sequence three times."""
    if not conv.cross or conv.memory_name is not None or not conv.causal_always:
        return conv
    longer = torch.randn(query.size(0), query.size(1) + 1, query.size(2), generator=torch.Generator().manual_seed(2))
    if not isinstance(attempt(module, conv, query, longer, sizes=sizes), str):
        return conv
    note = (f"forward: {conv.query_name}, {conv.key_name}, {conv.value_name} of a causal module that refuses keys of another "
            "length: self-attention (the same tokens three times; kv_cache and sliding_window apply)")
    return replace(conv, self_only=True, keys_required=True, notes=conv.notes + (note,))


def _could_not_run(module: nn.Module, conv: Convention, query: Tensor, key: Tensor, sizes: Sizes, reason: str) -> str:
    """'could not run: Name(hidden_states=float32 (3, 4, 8), ...) raised Error: message'."""
    try:
        passed = arguments(module, conv, query, key if conv.cross else None, key if conv.cross else None, sizes=sizes,
                           keep=_all_visible(conv, query, key))
        shown = ", ".join(f"{k}={describe(v)}" for k, v in passed.items())
    except Exception:  # noqa: BLE001 - the arguments themselves could not be built
        shown = "..."
    return f"could not run: {type(module).__name__}({shown}) {reason}"


def _causal_in_mask(module: nn.Module, conv: Convention) -> Convention:
    """A transformers-style decoder leaves causality to the caller's 4-D mask: put the triangle in it."""
    config = getattr(module, "config", None)
    flag = getattr(module, "is_causal", None)
    decoder = flag is True or (flag is None and getattr(config, "is_decoder", False) is True)
    if conv.mask_name is None or conv.cross or not decoder or not takes_transformers_masks(module):
        return conv
    note = "causal: is_causal=True with transformers-style masks; the causal triangle goes into the 4-D mask"
    window = window_of(module)
    note += f", with the sliding window {window}" if window else ""
    return replace(conv, causal_in_mask=True, causal_always=True, mask_shape="b1ts", mask_window=window, notes=conv.notes + (note,))


PARTIAL_ROTARY = (Fraction(1, 2), Fraction(1, 4), Fraction(1, 8))  # shares of a head that rotary tables may cover


def _choose_supplied(module: nn.Module, conv: Convention, query: Tensor, key: Tensor, sizes: Sizes) -> tuple[Convention, Union[Outcome, str]]:
    """The fewest positional inputs that run; where none runs and a rotary table is supplied, tables narrower than a
    head (a module that rotates only part of each head: it refuses tables of the whole head size)."""
    found, out = _fewest_supplied(module, conv, query, key, sizes)
    if not isinstance(out, str) or "rotary" not in conv.supplied.values():
        return found, out
    for share in PARTIAL_ROTARY:
        partial, works = _fewest_supplied(module, replace(conv, rotary_share=share), query, key, sizes)
        if not isinstance(works, str):
            note = f"rotary: tables {share} of the head size wide (the module rotates part of each head)"
            return replace(partial, notes=partial.notes + (note,)), works
    return found, out


def _fewest_supplied(module: nn.Module, conv: Convention, query: Tensor, key: Tensor, sizes: Sizes) -> tuple[Convention, Union[Outcome, str]]:
    """The fewest positional inputs that run: none (None where required), the required ones, all but ALiBi, all."""
    everything = conv.supplied
    required = _required_supplied(module, conv)
    options = [{n: r for n, r in everything.items() if r in ("residual", "start_pos")},
               {n: r for n, r in everything.items() if r in ("residual", "start_pos") or n in required},
               {n: r for n, r in everything.items() if r != "alibi"}, everything]
    first: Union[Outcome, str] = ""
    seen: list[dict[str, str]] = []
    for supplied in options:
        if supplied in seen:
            continue
        seen.append(supplied)
        trial = replace(conv, supplied=supplied, extra={**conv.extra, **{n: None for n in required if n not in supplied}})
        for shape in _shapes(trial):
            out = attempt(module, replace(trial, mask_shape=shape), query, key, sizes=sizes, keep=_all_visible(trial, query, key))
            if not isinstance(out, str):
                return _with_supplied_note(replace(trial, mask_shape=shape)), out
            first = first or out
    return _with_supplied_note(replace(conv, supplied=everything)), first


def _shapes(conv: Convention) -> tuple[str, ...]:
    if conv.mask_name in PADDING_MASKS:
        return ("bs",)
    if conv.mask_name is None:
        return (conv.mask_shape,)
    return ("b1ts", "bts") if conv.causal_in_mask else MASK_SHAPES


def _all_visible(conv: Convention, query: Tensor, key: Tensor) -> Optional[Tensor]:
    """The most favourable ordinary call passes an all-visible mask where the module takes one."""
    return torch.ones(query.size(0), key.size(1), dtype=torch.bool) if conv.mask_name is not None else None


def _required_supplied(module: nn.Module, conv: Convention) -> dict[str, str]:
    required = {p.name for p in forward_parameters(module) if p.default is p.empty}
    return {n: r for n, r in conv.supplied.items() if n in required}


def _with_supplied_note(conv: Convention) -> Convention:
    notes = tuple(n for n in conv.notes if not n.startswith("supplied: "))
    if conv.supplied:
        notes += ("supplied: " + ", ".join(f"{n} ({r}, positions 0..seq-1)" if r not in ("residual", "start_pos") else f"{n} (zeros)"
                                            for n, r in conv.supplied.items()),)
    return replace(conv, notes=notes)


# ---------------------------------------------------------------- layout


def _probe_layout(module: nn.Module, conv: Convention, query: Tensor, key: Tensor, sizes: Sizes) -> Convention:
    """The layout by behaviour: the one in which changing one batch item changes no other item's output.

    Calls keep the declared layout (``batch_first``: the module's attribute or annotation, else batch-first), so a module
    whose attribute is its bug still fails ``batch_independence``; ``behaves_batch_first`` records what the module does
    (prove, audit and report build their inputs in it) and a note says when the two differ.
    """
    declared = _independent(module, conv, query, key, sizes)
    other = _independent(module, replace(conv, batch_first=not conv.batch_first), query, key, sizes)
    if declared and other is False:
        return replace(conv, behaves_batch_first=conv.batch_first)
    if declared is not False or not other:
        return conv  # both keep items apart, or neither: behaviour cannot tell
    found, said = not conv.batch_first, "batch-first" if conv.batch_first else "seq-first"
    shown = "batch-first" if found else "seq-first"
    note = (f"layout: {shown} by behaviour (fed {said}, one item's change reaches the others); calls stay {said}: "
            f"give --layout {shown} if that is its contract")
    return replace(conv, behaves_batch_first=found, notes=conv.notes + (note,))


def _independent(module: nn.Module, conv: Convention, query: Tensor, key: Tensor, sizes: Sizes) -> Optional[bool]:
    """Whether outputs 0 and 2 ignore a change of item 1 (batch=3, seq=4: the two axes differ); None when a call fails."""
    changed_query, changed_key = query.clone(), key.clone()
    changed_query[1] = changed_query[1] * -2 + 1
    changed_key[1] = changed_key[1] * -2 + 1
    base = attempt(module, conv, query, key, sizes=sizes)
    moved = attempt(module, conv, changed_query, changed_key if conv.cross else changed_query, sizes=sizes)
    if isinstance(base, str) or isinstance(moved, str) or tuple(base.output.shape) != tuple(moved.output.shape):
        return None
    if base.output.dim() < 2 or base.output.size(0) != query.size(0):
        return None
    a, b = base.output[[0, 2]], moved.output[[0, 2]]
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return None
    return bool(torch.allclose(a, b, atol=1e-5, rtol=1e-4))


# ---------------------------------------------------------------- masks


def _probe_mask(module: nn.Module, conv: Convention, query: Tensor, key: Tensor, sizes: Sizes, *, fixed: bool,
                strict: bool = False) -> Convention:
    """The convention (and shape) under which a hidden key changes no other output; the name's guess first.

    ``--mask X`` (``fixed``) is the user's contract: only its shape is probed. A padding mask's name is a contract too
    (torch: True = padding); a module whose behaviour consistently shows another convention (a hidden first and last key)
    is called in it, with a warning naming both, unless ``strict``.
    """
    if conv.mask_name is None or conv.mask_kind is None:
        return conv
    kinds = (conv.mask_kind,) if fixed else (conv.mask_kind,) + tuple(k for k in _KINDS if k != conv.mask_kind)
    shapes = _shapes(conv)
    for kind in kinds:
        for shape in shapes:
            trial = replace(conv, mask_kind=kind, mask_shape=shape, mask_by="--mask" if fixed else "behaviour")
            if not _hides_a_key(module, trial, query, key, sizes):
                continue
            if kind == conv.mask_kind or conv.mask_name not in PADDING_MASKS:
                return _with_mask_note(trial, kind != conv.mask_kind)
            if _hides_a_key(module, trial, query, key, sizes, at=-1):  # consistently: the last key too
                return _against_contract(conv, trial, strict)
    trial = replace(conv, mask_shape=next((s for s in shapes if _accepts_shape(module, replace(conv, mask_shape=s), query, key, sizes)), shapes[0]))
    note = f"mask: the probe found no convention under which {conv.mask_name} hides a key; using {MASK_TEXT[conv.mask_kind]}"
    return replace(_with_mask_note(trial, False), notes=_with_mask_note(trial, False).notes + (note,))


_CONTRACT_OWNER = {"encoder_padding_mask": "fairseq's"}  # every other padding mask name: torch's


def _against_contract(conv: Convention, found: Convention, strict: bool) -> Convention:
    """A padding mask that behaves in another convention than its name's contract: a warning, or (``strict``) the contract kept."""
    name = conv.mask_name or ""
    contract, behaviour = MASK_TEXT.get(conv.mask_kind, conv.mask_kind), MASK_TEXT.get(found.mask_kind, found.mask_kind)  # type: ignore[arg-type]
    owner = _CONTRACT_OWNER.get(name, "torch's")
    said = f"{name}: {behaviour} by behaviour ({owner} contract for this name is {contract})"
    if strict:
        kept = _with_mask_note(replace(conv, mask_shape=found.mask_shape, mask_by="contract"), False)
        return replace(kept, notes=kept.notes + (f"warning: {said}; --strict keeps the contract",))
    called = _with_mask_note(found, True)
    return replace(called, notes=called.notes + (f"warning: {said}; calls follow the behaviour (--strict keeps the contract)",))


def _drop_switch_mask(module: nn.Module, conv: Convention, query: Tensor, key: Tensor, sizes: Sizes) -> Convention:
    """An optional mask that changes the output with every key visible is a switch (whisper's causal mask), not a padding mask."""
    if conv.mask_name is None or conv.mask_required or conv.causal_in_mask or conv.mask_name in PADDING_MASKS:
        return conv  # a padding mask's name is its contract: an all-visible mask that changes the output is a bug to report
    plain = attempt(module, conv, query, key, sizes=sizes)
    visible = attempt(module, conv, query, key, sizes=sizes, keep=torch.ones(query.size(0), key.size(1), dtype=torch.bool))
    if isinstance(plain, str) or isinstance(visible, str) or torch.allclose(plain.output, visible.output, atol=1e-5):
        return conv
    note = f"mask: {conv.mask_name} changes the output even with every key visible, so it is not a padding mask; not passed"
    notes = tuple(n for n in conv.notes if not n.startswith("mask: ")) + (note,)
    return replace(conv, mask_name=None, mask_kind=None, notes=notes)


def mask_description(conv: Convention) -> Optional[dict[str, Any]]:
    """The mask as decided, for JSON: its argument, convention, shape, whether required, and how it was decided."""
    if conv.mask_name is None or conv.mask_kind is None:
        return None
    return {"name": conv.mask_name, "kind": conv.mask_kind, "convention": MASK_TEXT.get(conv.mask_kind, conv.mask_kind),
            "shape": _SHAPE_TEXT[conv.mask_shape], "required": conv.mask_required, "by": conv.mask_by}


def _with_mask_note(conv: Convention, changed: bool) -> Convention:
    text = f"mask: {conv.mask_name} ({MASK_TEXT[conv.mask_kind]}{', found by probing' if changed else ''}), shape {_SHAPE_TEXT[conv.mask_shape]}"  # type: ignore[index]
    notes = tuple(text if n.startswith("mask: ") else n for n in conv.notes)
    return replace(conv, notes=notes)


def _accepts_shape(module: nn.Module, conv: Convention, query: Tensor, key: Tensor, sizes: Sizes) -> bool:
    keep = torch.ones(query.size(0), key.size(1), dtype=torch.bool)
    out = attempt(module, conv, query, key, keep=keep, sizes=sizes)
    return not isinstance(out, str) and tuple(out.output.shape) == tuple(query.shape)


def _hides_a_key(module: nn.Module, conv: Convention, query: Tensor, key: Tensor, sizes: Sizes, at: int = 0) -> bool:
    """Key ``at`` masked: changing its contents changes no output row but its own token's, and the mask is not ignored."""
    keep = torch.ones(query.size(0), key.size(1), dtype=torch.bool)
    keep[:, at] = False
    changed_key = key.clone()
    changed_key[:, at] = changed_key[:, at] * -3 + 1
    changed_query = query if conv.cross else changed_key
    base = attempt(module, conv, query, key, keep=keep, sizes=sizes)
    moved = attempt(module, conv, changed_query, changed_key, keep=keep, sizes=sizes)
    if isinstance(base, str) or isinstance(moved, str) or tuple(base.output.shape) != tuple(query.shape):
        return False
    rows = torch.arange(query.size(1))
    rows = rows if conv.cross else rows[rows != rows[at]]
    a, b = base.output[:, rows], moved.output[:, rows]
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return False
    return bool(torch.allclose(a, b, atol=1e-5, rtol=1e-4))


# ---------------------------------------------------------------- causality and weights


def _looks_causal(module: nn.Module, conv: Convention, query: Tensor, sizes: Sizes) -> bool:
    """Self-attention whose first output ignores later tokens while later outputs depend on earlier ones (a q/k/v forward is
    given the same tokens three times: a cross-attention module sees every key and is never judged causal)."""
    if conv.memory_name is not None:
        return False
    edited = query.clone()
    edited[:, 1:] = edited[:, 1:].flip(0) * 2 + 1  # change every token after the first
    start = query.clone()
    start[:, 0] = start[:, 0] * -2 + 1  # change only the first token
    first, second, third = (attempt(module, conv, x, x, sizes=sizes) for x in (query, edited, start))
    if any(isinstance(o, str) or tuple(o.output.shape) != tuple(query.shape) for o in (first, second, third)):
        return False
    same_first = torch.allclose(first.output[:, 0], second.output[:, 0], atol=1e-5)  # type: ignore[union-attr]
    later_moves = not torch.allclose(first.output[:, 1:], third.output[:, 1:], atol=1e-5)  # type: ignore[union-attr]
    return same_first and later_moves


def _probe_causal(module: nn.Module, conv: Convention, query: Tensor, sizes: Sizes) -> Convention:
    if conv.causal_name is None:
        return conv
    out = attempt(module, conv, query, query, causal=True, sizes=sizes)
    if isinstance(out, str):  # e.g. torch's is_causal is only a hint that needs attn_mask
        return replace(conv, causal_name=None, notes=conv.notes + (f"causal: {conv.causal_name}=True {out}; not used",))
    return replace(conv, notes=conv.notes + (f"causal flag: {conv.causal_name}",))


def _probe_weights(module: nn.Module, conv: Convention, query: Tensor, key: Tensor, sizes: Sizes) -> Convention:
    out = attempt(module, conv, query, key, weights=True, sizes=sizes)
    if isinstance(out, str) and conv.mask_name is not None:
        out = attempt(module, conv, query, key, weights=True, keep=torch.ones(query.size(0), key.size(1), dtype=torch.bool), sizes=sizes)
    if isinstance(out, str) or out.weights is None:
        return replace(conv, notes=conv.notes + ("weights: not returned",))
    return replace(conv, returns_weights=True, notes=conv.notes + (f"weights: returned, shape {tuple(out.weights.shape)}",))


def unnormalised(module: nn.Module, conv: Convention, d_model: int, sizes: Sizes) -> Optional[str]:
    """Why the module's weights do not sum to 1, from its own answers, or None (they do, or no call decided it).

    With one query and one key, weights summing to 1 give the key's value through the value and output projections, an
    affine function of the key: f(x) + f(-x) = 2 f(0). ReLU, sigmoid and unnormalised linear kernels weigh it by q·k."""
    token = torch.randn(2, 1, d_model, generator=torch.Generator().manual_seed(11))  # (batch, 1, d_model)

    def run(key: Tensor) -> Optional[Tensor]:
        out = attempt(module, conv, token if conv.cross else key, key, sizes=sizes)
        return None if isinstance(out, str) or not torch.isfinite(out.output).all() else out.output

    one, minus, zero = run(token), run(-token), run(token * 0)
    if one is None or minus is None or zero is None:
        return None  # calls that fail decide nothing
    if diff(one + minus, 2 * zero) is None:
        return None
    return ("with one key the output is not affine in it: its weight is not 1 (ReLU, sigmoid or unnormalised attention), "
            "or the module does more than attention (a norm of its input)")
