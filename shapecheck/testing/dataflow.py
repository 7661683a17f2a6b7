"""The q, k, v and output projections found by data flow, for modules whose names are not in the projection table.

One call runs under a ``TorchDispatchMode`` while forward hooks label each Linear's output with its
name; every op's outputs carry the union of its inputs' labels. The softmax's input is the product
of the query and key projections: the matrix product that made it names them (first operand: the
query). The product of the probabilities with another tensor names the value projection, and the
Linear whose input carries the value's label is the output projection. Only separate projections
(one Linear each) are read this way; fused ones stay with the name table.

The same labels find a soft-cap (Gemma 2's ``tanh(scores / c) · c`` on the logits): a tanh whose input
comes from a product of two projections, not from the probabilities, whose output is multiplied by a
constant ``c`` and reaches the softmax. The cap is that constant, as the module uses it (``trace_scores``).

And the additive terms on the scores that do not come from the inputs' projections: an ALiBi or relative-position
bias computed inside forward from a buffer or a parameter, or given as an argument, added to the scores (``+``,
``baddbmm``'s input) or passed to SDPA as a float ``attn_mask`` (``trace_scores``). The parameters that reach
such a term are named, so a bias table does not make the reference inapplicable.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import torch
from torch import Tensor, nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

_SOFTMAX = "<softmax>"
_SCORES = "<scores>"  # a product of two labelled tensors, before any softmax
_TANH = "<tanh>"  # tanh of scores
_BIASED = "<biased>"  # scores with an additive term that no projection made
_PARAM = "~"  # prefix of the label of a parameter outside the projections
_SDPA = "scaled_dot_product"
_PRODUCTS = ("bmm", "mm", "matmul", "baddbmm", "einsum")


class _Flow(TorchDispatchMode):
    """Propagates labels through ops; records the products and the softmax inputs."""

    def __init__(self, labels: dict[int, frozenset[str]], keep: list[Tensor]) -> None:
        super().__init__()
        self.labels, self.keep = labels, keep
        self.result: Any = None  # what the traced call returned
        self.products: list[tuple[frozenset[str], frozenset[str], int]] = []  # (left labels, right labels, id of output)
        self.softmax_inputs: list[int] = []
        self.tanh_outputs: set[int] = set()
        self.caps: list[float] = []  # constants a tanh of the scores was multiplied by
        self.capped_softmax = False  # a softmax input carries a tanh of the scores
        self.terms: list[tuple[Tensor, float]] = []  # (term added to the scores, factor applied to it)
        self.biased_softmax = False  # a softmax input carries such a term
        self.term_params: set[str] = set()  # parameters outside the projections that reach a term
        self.params_elsewhere: set[str] = set()  # ... and those that meet projected values some other way

    def label(self, value: Any) -> frozenset[str]:
        return self.labels.get(id(value), frozenset()) if isinstance(value, Tensor) else frozenset()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        flat = [a for a in tree_flatten((args, kwargs or {}))[0] if isinstance(a, Tensor)]
        merged = frozenset().union(*(self.label(a) for a in flat)) if flat else frozenset()
        name = func.__name__.split(".")[0]
        captured = False  # this op put a term on the scores
        if "softmax" in name:
            self.softmax_inputs.append(id(flat[0]))
            self.capped_softmax = self.capped_softmax or _TANH in self.label(flat[0])
            self.biased_softmax = self.biased_softmax or _BIASED in self.label(flat[0])
            merged = merged | {_SOFTMAX}
        tensors = [o for o in tree_flatten(out)[0] if isinstance(o, Tensor)]
        if name in _PRODUCTS and len(flat) >= 2 and tensors:
            left, right = (flat[1], flat[2]) if name == "baddbmm" and len(flat) >= 3 else (flat[0], flat[1])
            self.products.append((self.label(left), self.label(right), id(tensors[0])))
            if _projected(self.label(left)) and _projected(self.label(right)) and _SOFTMAX not in merged:
                merged = merged | {_SCORES}
            if name == "baddbmm" and self._term(flat[0], float((kwargs or {}).get("beta", 1.0))):
                merged, captured = merged | {_BIASED}, True
        if name in ("add", "add_", "sub", "sub_") and len(flat) == 2 and _SOFTMAX not in merged:
            scores = next((i for i, a in enumerate(flat) if _SCORES in self.label(a)), None)
            sign = -1.0 if name.startswith("sub") else 1.0
            if scores is not None and (sign > 0 or scores == 0) and self._term(flat[1 - scores], sign * float((kwargs or {}).get("alpha", 1.0))):
                merged, captured = merged | {_BIASED}, True
        if _SDPA in name:
            mask = (kwargs or {}).get("attn_mask", args[3] if len(args) > 3 and isinstance(args[3], Tensor) else None)
            if _projected(self.label(args[0])) and _projected(self.label(args[1])) and isinstance(mask, Tensor):
                captured = self._term(mask, 1.0)
                self.biased_softmax = captured or self.biased_softmax
        if name == "tanh" and _SCORES in merged and _SOFTMAX not in merged and tensors:
            self.tanh_outputs.add(id(tensors[0]))
            merged = merged | {_TANH}
        if name == "mul":
            self._cap(args)
        if not captured and len(flat) >= 2:  # a parameter outside the projections meeting projected values
            own = [a for a in flat if not _projected(self.label(a))]
            if len(own) < len(flat):
                self.params_elsewhere |= {n[len(_PARAM):] for a in own for n in self.label(a) if n.startswith(_PARAM)}
        for o in tensors:
            self.labels[id(o)] = self.labels.get(id(o), frozenset()) | merged
            self.keep.append(o)
        return out


    def _term(self, term: Any, factor: float) -> bool:
        """Record a floating-point term added to the scores when no projection made it."""
        if not isinstance(term, Tensor) or not term.is_floating_point() or _projected(self.label(term)) or _SCORES in self.label(term):
            return False
        self.terms.append((term.detach().clone(), factor))
        self.term_params |= {n[len(_PARAM):] for n in self.label(term) if n.startswith(_PARAM)}
        return True

    def _cap(self, args: Any) -> None:
        """A tanh of the scores times a constant (a number or a one-element tensor): that constant is a cap."""
        if len(args) != 2 or not any(isinstance(a, Tensor) and id(a) in self.tanh_outputs for a in args):
            return
        other = args[1] if isinstance(args[0], Tensor) and id(args[0]) in self.tanh_outputs else args[0]
        if isinstance(other, (int, float)):
            self.caps.append(float(other))
        elif isinstance(other, Tensor) and other.numel() == 1:
            self.caps.append(float(other))


def _projected(labels: frozenset[str]) -> frozenset[str]:
    """The projections (Linear layers) among the labels."""
    return frozenset(n for n in labels if not n.startswith(("<", _PARAM)))


def _single(labels: frozenset[str]) -> Optional[str]:
    names = list(_projected(labels))
    return names[0] if len(names) == 1 else None


def trace_roles(module: nn.Module, run: Callable[[], Any]) -> Optional[dict[str, str]]:
    """{'q': name, 'k': name, 'v': name, 'o': name or ''} from one call ``run()``, or None when the flow is not plain."""
    flow, inputs = _traced(module, run)
    return None if flow is None else _roles(flow, inputs)


class Bias(NamedTuple):
    """The additive terms a traced call put on its scores: their sum (finite part: masks are left to the reference),
    and the parameters outside the projections that reached them."""

    term: Tensor
    params: frozenset[str]


def trace_scores(module: nn.Module, run: Callable[[], Any], params: tuple[str, ...] = ()) -> tuple[Any, Optional[float], Optional[Bias]]:
    """(what ``run()`` returned, the soft-cap constant, the additive term on the scores) from one traced call.

    The soft-cap is the constant c of a ``tanh(scores / c) · c`` that reaches the softmax (None: no tanh of the scores,
    one after the softmax, or more than one constant). ``params``: parameters outside the projections, followed to
    see whether they only make the additive term (a relative-position table)."""
    flow, _ = _traced(module, run, params)
    if flow is None:
        return run(), None, None
    softcap = flow.caps[0] if flow.capped_softmax and len(set(flow.caps)) == 1 else None
    return flow.result, softcap, _bias(flow)


def _bias(flow: _Flow) -> Optional[Bias]:
    if not flow.biased_softmax or not flow.terms:
        return None
    total: Optional[Tensor] = None
    try:
        for term, factor in flow.terms:
            part = term.double() * factor
            part = torch.where(part > -1e4, part, torch.zeros((), dtype=part.dtype))  # a mask value: the reference masks
            total = part if total is None else total + part
    except RuntimeError:  # terms that do not broadcast together: none read
        return None
    return Bias(total, frozenset(flow.term_params - flow.params_elsewhere))  # type: ignore[arg-type]


def _traced(module: nn.Module, run: Callable[[], Any], params: tuple[str, ...] = ()) -> tuple[Optional[_Flow], dict[str, frozenset[str]]]:
    linears = {m: n for n, m in module.named_modules() if isinstance(m, nn.Linear)}
    named = dict(module.named_parameters())
    labels: dict[int, frozenset[str]] = {id(named[n]): frozenset({_PARAM + n}) for n in params if n in named}
    keep: list[Tensor] = []
    inputs: dict[str, frozenset[str]] = {}

    def hook(mod: nn.Module, args: tuple, out: Any) -> None:
        inputs[linears[mod]] = frozenset().union(*(labels.get(id(a), frozenset()) for a in args if isinstance(a, Tensor)))
        if isinstance(out, Tensor):
            labels[id(out)] = frozenset({linears[mod]})
            keep.append(out)

    handles = [m.register_forward_hook(hook) for m in linears]
    try:
        with torch.no_grad(), _Flow(labels, keep) as flow:
            flow.result = run()
    except Exception:  # noqa: BLE001 - no flow, no reference
        return None, inputs
    finally:
        for h in handles:
            h.remove()
    return flow, inputs


def _roles(flow: _Flow, inputs: dict[str, frozenset[str]]) -> Optional[dict[str, str]]:
    scores = next(((a, b) for a, b, _ in flow.products if _single(a) and _single(b) and _SOFTMAX not in a | b), None)
    mixed = next(((a, b) for a, b, _ in flow.products if _SOFTMAX in a and _single(b)), None)
    if scores is None or mixed is None or len(set(flow.softmax_inputs)) != 1:
        return None
    q, k, v = _single(scores[0]), _single(scores[1]), _single(mixed[1])
    if len({q, k, v}) != 3:
        return None
    out = next((n for n, seen in inputs.items() if v in seen and _SOFTMAX in seen and n not in (q, k, v)), "")
    return {"q": q, "k": k, "v": v, "o": out}  # type: ignore[dict-item]
