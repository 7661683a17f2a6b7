"""How to call a module: the one decision ``verify``, ``prove``, ``audit`` and ``report`` share.

``decide(module)`` says what the module's first input is (token ids, an image, hidden states) and, for hidden
states, runs the convention probe (``shapecheck.testing.probe.discover``: a few calls at batch 3, seq 4 on the
CPU) to find which argument is the query, whether keys and values are the query's own tokens (self-attention)
or another sequence, the layout by behaviour, which masks and positional inputs a call needs and in which
convention and shape. Sizes do not change a convention, so a module built on the meta device is decided on a
small CPU instance of the same class (``decide(module, twin=small)``); the decision is kept per module object.

    decision = decide(module)
    kwargs = decision.call(module, batch=8, seq=2048, device="meta")   # any size, any device
    decision.as_json()   # the ``convention`` key of each command's JSON, the same keys everywhere

Where the probe cannot decide (the module cannot run, or it exists on meta only), ``Decision.reason`` says why in
one line and the commands build their inputs from the signature as before.
"""

from __future__ import annotations

import copy
import weakref
from dataclasses import dataclass, replace
from typing import Any, Optional

import torch
from torch import nn

from shapecheck.errors import UsageError, first_line
from shapecheck.images import image_input
from shapecheck.target import forward_parameters
from shapecheck.vocabulary import MASK_TEXT

HIDDEN, TOKENS, IMAGE, NONE = "hidden states", "token ids", "image", "none"  # what forward's first argument is
CATALOGUE, CHOSEN = "the catalogue kind's own inputs", "named with --inputs/--cross"  # inputs no probe decides
PROBE_SIZES = {"d_model": 16, "heads": 2}  # the small CPU instance a meta module is decided on
_DECIDED: "weakref.WeakKeyDictionary[nn.Module, Decision]" = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Decision:
    """What ``module``'s first input is and, for hidden states, the probed convention (``testing.adapt.Convention``)."""

    inputs: str  # HIDDEN | TOKENS | IMAGE | NONE | CATALOGUE | CHOSEN
    convention: Any = None  # a Convention (hidden states only)
    reason: Optional[str] = None  # why no convention was decided
    heads: Optional["Heads"] = None  # the head counts the target accepts (commands that build from a target)

    @property
    def runs(self) -> bool:
        """A convention was decided and an ordinary call ran under it."""
        return self.convention is not None and self.convention.could_not_run is None

    @property
    def batch_first(self) -> bool:
        """The layout the module behaves in (by behaviour where the probe could tell, else the declared one)."""
        conv = self.convention
        if conv is None:
            return True
        return conv.batch_first if conv.behaves_batch_first is None else conv.behaves_batch_first

    def note(self) -> Optional[str]:
        """One line for a command's notes: what was decided, or why nothing was (None for token and image inputs)."""
        if self.inputs != HIDDEN:
            return None
        if not self.runs:
            return f"convention: not decided ({self.why()}); inputs built from forward's signature"
        conv = self.convention
        kind = "cross-attention" if conv.cross else "self-attention"
        layout = "batch-first" if self.batch_first else "seq-first"
        extra = [f"{conv.mask_name} ({MASK_TEXT.get(conv.mask_kind, conv.mask_kind)})"] if conv.mask_required else []
        extra += [f"{n} ({r})" for n, r in conv.supplied.items()]
        heads = self.heads.note() if self.heads is not None else None
        return (f"convention (probed): {kind}, {layout}" + (f"; passes {', '.join(extra)}" if extra else "")
                + (f"; {heads}" if heads else ""))

    def why(self) -> str:
        if self.reason:
            return self.reason
        return self.convention.could_not_run if self.convention is not None else "no probe"

    def call(self, module: nn.Module, batch: int, seq: int, device: str, *, grad: bool = False,
             generator: Optional[torch.Generator] = None) -> dict[str, Any]:
        """Keyword arguments for ``module`` at ``batch`` × ``seq`` on ``device`` (zeros on meta, random on the CPU)."""
        from shapecheck.testing.adapt import Sizes, arguments

        if not self.runs:
            raise UsageError(f"{type(module).__name__}: no calling convention to build inputs from ({self.why()})")
        width = input_width(module)
        if device == "meta":
            query = torch.zeros(batch, seq, width, device="meta")  # (batch, seq, d_model)
        else:
            query = torch.randn(batch, seq, width, generator=generator).to(device)  # (batch, seq, d_model)
        query.requires_grad_(grad)
        conv = replace(self.convention, batch_first=self.batch_first)
        with torch.device(device):
            return arguments(module, conv, query, sizes=Sizes())

    def as_json(self) -> dict[str, Any]:
        """The ``convention`` key of verify's, prove's, audit's and report's JSON (the same keys in all four)."""
        conv = self.convention
        reason = None if self.runs else self.reason or (self.why() if self.inputs == HIDDEN else None)
        found: dict[str, Any] = {
            "inputs": self.inputs, "decided": self.runs, "reason": reason, "attention": None, "query": None, "key": None,
            "value": None, "memory": None, "layout": None, "layout_declared": None, "mask": None, "causal": None,
            "supplied": {}, "constants": {}, "returns_weights": None, "notes": [],
            "heads": self.heads.as_json() if self.heads is not None else None,
        }
        if conv is None:
            return found
        from shapecheck.testing.probe import mask_description

        found.update(
            attention="cross" if conv.cross else "self", query=conv.query_name, key=conv.key_name, value=conv.value_name,
            memory=conv.memory_name, layout="batch-first" if self.batch_first else "seq-first",
            layout_declared="batch-first" if conv.batch_first else "seq-first", mask=mask_description(conv),
            causal={"flag": conv.causal_name, "always": conv.causal_always, "in_mask": conv.causal_in_mask},
            supplied=dict(conv.supplied), constants={k: repr(v) for k, v in conv.extra.items()},
            returns_weights=conv.returns_weights, notes=list(conv.notes))
        return found


def convention_json(conv: Any, heads: Optional["Heads"] = None) -> dict[str, Any]:
    """``Decision.as_json`` of a convention verify discovered itself (at its drawn sizes and options)."""
    return Decision(HIDDEN, conv, heads=heads).as_json()


def with_heads(module: nn.Module, heads: "Heads") -> Decision:
    """The decision for ``module`` with the head counts its target accepts (``head_constraints``)."""
    decision = replace(decide(module), heads=heads)
    _DECIDED[module] = decision
    return decision


def first_input(module: nn.Module) -> str:
    """What the first argument of ``forward`` is: token ids, an image, hidden states, or none (no argument)."""
    from shapecheck.counting.inputs import takes_tokens

    params = forward_parameters(module)
    if not params:
        return NONE
    if params[0].name in ("pixel_values", "input_features") or image_input(module) is not None:
        return IMAGE
    dtypes = getattr(params[0].annotation, "dtypes", None) or ()
    integer = any(str(d).startswith("int") for d in dtypes) and not any(str(d).startswith("float") for d in dtypes)
    return TOKENS if integer or takes_tokens(module) else HIDDEN


def input_width(module: nn.Module) -> int:
    """The width of the hidden states ``module`` reads (``counting.inputs.model_width``)."""
    from shapecheck.counting.inputs import model_width

    return model_width(module)


def decide(module: nn.Module, *, twin: Optional[nn.Module] = None) -> Decision:
    """The decision for ``module`` (kept per module object); ``twin``: a small CPU instance of its class to probe instead."""
    if module in _DECIDED:
        return _DECIDED[module]
    decision = _decide(module, twin)
    _DECIDED[module] = decision
    return decision


def undecided(module: nn.Module, reason: str) -> Decision:
    """Record that ``module`` (a hidden-states module) could not be probed, and why."""
    decision = Decision(first_input(module), reason=reason if first_input(module) == HIDDEN else None)
    _DECIDED[module] = decision
    return decision


COPY_LIMIT = 2**24  # elements: a module up to this size is probed on a copy, so state its forward keeps (a cache) stays as it was


def _copy(module: nn.Module) -> nn.Module:
    """A copy of a small module to probe (the module itself when it is large or cannot be copied)."""
    if sum(t.numel() for t in (*module.parameters(), *module.buffers())) > COPY_LIMIT:
        return module
    try:
        return copy.deepcopy(module)
    except Exception:  # noqa: BLE001 - user modules may hold objects that cannot be copied
        return module


def _decide(module: nn.Module, twin: Optional[nn.Module]) -> Decision:
    inputs = first_input(module)
    if inputs != HIDDEN:
        return Decision(inputs)
    subject = twin if twin is not None else module
    if any(t.is_meta for t in (*subject.parameters(), *subject.buffers())):
        return Decision(inputs, reason="built on the meta device only, where no call shows behaviour")
    subject = subject if twin is not None else _copy(module)
    try:
        width = input_width(subject)
    except UsageError as error:
        return Decision(inputs, reason=str(error))
    from shapecheck.testing.probe import discover

    was_training = subject.training
    subject.eval()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return Decision(inputs, discover(subject, width))
    except UsageError as error:
        return Decision(inputs, reason=str(error))
    except Exception as error:  # noqa: BLE001 - user code may raise anything while probed
        return Decision(inputs, reason=f"the probe raised {first_line(error)}")
    finally:
        subject.train(was_training)


# ---------------------------------------------------------------- head constraints


@dataclass(frozen=True)
class Heads:
    """The head counts a target accepts: the head-size multiple its constructor needs and whether its forward runs with
    fewer key/value heads than query heads ("grouped"), only with as many ("equal"), or takes no kv-heads size ("none")."""

    d_head_multiple: int = 1
    kv_heads: str = "none"  # "grouped" | "equal" | "none" | "unknown"
    reason: Optional[str] = None  # why grouped kv heads were refused, or why nothing could be decided

    def as_json(self) -> dict[str, Any]:
        return {"d_head_multiple": self.d_head_multiple, "kv_heads": self.kv_heads, "reason": self.reason}

    def note(self) -> Optional[str]:
        if self.kv_heads == "equal":
            return f"heads: kv heads must equal heads (forward with heads=4, kv_heads=2: {self.reason})"
        return None


def head_constraints(target: Any, *, init: Optional[dict[str, Any]] = None, keep_defaults: bool = False,
                     d_head_multiple: Optional[int] = None) -> Heads:
    """Probed once for every command: the constructor on meta (``target.probe_constraints``), then the forward of two
    small CPU instances, heads=4 with kv_heads=2 and with kv_heads=4, called as ``decide`` finds."""
    from shapecheck.target import probe_constraints

    try:
        multiple = probe_constraints(target, init=init, keep_defaults=keep_defaults, d_head_multiple=d_head_multiple).d_head_multiple
    except UsageError as error:
        return Heads(d_head_multiple or 1, "unknown", str(error))
    return kv_heads_accepted(target, multiple, init=init, keep_defaults=keep_defaults)


def kv_heads_accepted(target: Any, multiple: int, *, init: Optional[dict[str, Any]] = None, keep_defaults: bool = False) -> Heads:
    """``head_constraints`` once the head-size multiple is known (verify finds it with its own notes)."""
    from shapecheck.target import has_role

    if not has_role(target, "kv_heads"):
        return Heads(multiple, "none")
    d_head = 2 * multiple  # rotary tables need even head sizes
    grouped, equal = (_refusal(target, {"heads": 4, "kv_heads": kv, "d_head": d_head, "d_model": 4 * d_head}, init, keep_defaults)
                      for kv in (2, 4))
    if grouped is None:
        return Heads(multiple, "grouped")
    return Heads(multiple, "equal", grouped) if equal is None else Heads(multiple, "unknown", equal)


def _refusal(target: Any, sizes: dict[str, int], init: Optional[dict[str, Any]], keep_defaults: bool) -> Optional[str]:
    """Why the target built at ``sizes`` on the CPU cannot be called, or None when an ordinary call runs."""
    from shapecheck.target import build

    try:
        module, _ = build(target, sizes, keep_defaults=keep_defaults, init=init, explicit=tuple(sizes))
    except UsageError as error:
        return str(error)
    decision = _decide(module, None)
    return None if decision.runs else decision.why()
