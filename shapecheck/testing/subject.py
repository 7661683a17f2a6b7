"""The module under test: a factory, its calling convention and the options of one verify run."""

from __future__ import annotations

import copy
import inspect
import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Optional

import torch
from torch import Tensor, nn

from shapecheck.errors import UsageError
from shapecheck.projections import STYLES
from shapecheck.convention import kv_heads_accepted
from shapecheck.target import Construction, Target, build, probe_constraints
from shapecheck.testing.adapt import (
    Convention, Layout, MaskOption, Outcome, Sizes, arguments, call, forward_parameters, module_size, read_outcome,
)
from shapecheck.vocabulary import constructor_role, pick
from shapecheck.testing.probe import attempt, discover, first_line, unnormalised
from shapecheck.testing.strategies import AttentionCase, AttentionShape
from shapecheck.testing.dataflow import trace_roles, trace_scores
from shapecheck.testing.weights import (
    Projections, find_projections, packed_candidates, projections_named, unexplained_parameters, with_qk_norms,
)

_FAMILIES = ", ".join(style.pattern for style in STYLES if style.verifiable)

MaskedRows = Literal["finite", "nan", "zeros", "uniform"]
MAX_SEQ_BUILT = 64  # max_seq / block_size / max_position_embeddings the module is built with


class CouldNotRun(UsageError):
    """The module raised on an ordinary call: reported once (exit 2), not as property failures."""


@dataclass(frozen=True)
class VerifyOptions:
    """Everything a verify run can be told; the CLI's options map onto these one to one."""

    layout: Optional[Layout] = None  # None: read ``batch_first`` where the module has it, else batch-first
    mask: MaskOption = "auto"
    causal: bool = False  # the module is causal by construction: assert it
    max_examples: int = 50
    seed: int = 0
    strict: bool = False  # fully masked rows fail instead of warning; a padding mask keeps its contract against its behaviour
    dropout: float = 0.1  # built with dropout > 0 so eval-mode determinism means something
    masked_rows: MaskedRows = "finite"  # declared policy for query rows with every key masked
    fail_fast: bool = False  # stop at the first failing property
    properties: Optional[tuple[str, ...]] = None  # None: all
    max_heads: int = 3
    max_d_head: int = 4
    max_batch: int = 3
    max_seq: int = 5
    init: dict[str, Any] = field(default_factory=dict)
    scale: Optional[float] = None  # the module's declared softmax scale (--scale); None: its attribute, else 1/√d_head
    d_head_multiple: Optional[int] = None  # --d-head-multiple; None: probed


def as_target(factory: Any) -> Target:
    """A Target over an nn.Module class or a factory function given from Python."""
    if isinstance(factory, Target):
        return factory
    name = getattr(factory, "__qualname__", type(factory).__name__)
    if inspect.isclass(factory):
        if not issubclass(factory, nn.Module):
            raise UsageError(f"{name} is a class but not a torch.nn.Module")
        return Target(name, factory.__module__, name, factory, True)
    if not callable(factory) or isinstance(factory, nn.Module):
        raise UsageError(f"{name}: give an nn.Module class or a factory function, not an instance")
    return Target(name, getattr(factory, "__module__", "?"), name, factory, False)


class Subject:
    """Builds the module per drawn shape, caches it in eval mode, and calls it batch-first."""

    def __init__(self, target: Target, options: VerifyOptions) -> None:
        self.target, self.options = target, options
        self._modules: dict[tuple[int, int, int, Optional[int]], nn.Module] = {}
        self._constructions: dict[tuple[int, int, int, Optional[int]], Construction] = {}
        self._refusals: dict[tuple[int, int, int, Optional[int]], Optional[str]] = {}
        constraints = probe_constraints(target, init=options.init, d_head_multiple=options.d_head_multiple)
        self.heads = kv_heads_accepted(target, constraints.d_head_multiple, init=options.init)  # shared with prove, audit, report
        self.grouped = self.heads.kv_heads != "none"  # a kv-heads size: kv heads < heads drawn (refused shapes are discarded)
        self.notes: tuple[str, ...] = constraints.notes + tuple(n for n in (self.heads.note(),) if n)
        self.head_lists, notes = head_lists(options.init)
        self.notes += notes
        spread = math.lcm(*(r for ratios in self.head_lists.values() for r in ratios)) if self.head_lists else 1
        if spread > 1:  # r·h heads over the width h·d_head: d_head a multiple of r (more than needed where widths grow too)
            self.notes += (f"constraint: head sizes drawn as multiples of {spread} so each entry's head count divides the width",)
        self.d_head_multiple, probe, self.conv = self._runnable(constraints.d_head_multiple * spread)
        self.probe_shape = self._shape(min(2, options.max_heads), self.d_head_multiple)
        self.construction = next(c for k, c in self._constructions.items() if self._modules[k] is probe)  # the size that runs
        self.flow = None if find_projections(probe) else self._trace(probe)
        proj = self._find(probe)
        extra = unexplained_parameters(probe, proj) if proj else []
        self.softcap, self.scores_bias, extra = self._scores(probe, extra) if proj else (None, None, extra)
        if self.softcap is not None:
            self.notes += (f"soft-cap: tanh(scores / {self.softcap:g}) · {self.softcap:g} before the softmax (found by data flow); "
                           "the reference applies it",)
        self.uses_reference = proj is not None and not extra
        self.internal_positions = None if self.conv.positional else internal_positions(probe)
        if self.internal_positions is None and not self.conv.positional and not self.conv.cross and self.causal_mode == "always":
            self.internal_positions = positions_by_behaviour(probe, self.conv, min(2, options.max_heads), self.d_head_multiple)
        if self.internal_positions is None and self.scores_bias and "positions" in self.scores_bias:
            self.internal_positions = "by data flow: the term added to the scores varies with the token positions"
        if self.internal_positions:
            self.notes += (f"positions: encoded by the module itself ({self.internal_positions}); "
                           "the reference tries the standard RoPE in both layouts, else says it cannot judge",)
        if self.scores_bias:
            self.notes += (f"bias: {self.scores_bias}; the reference adds it as the module computes it for each call",)
        self.notes += _scale_note(probe, options.scale)
        self.unnormalised = unnormalised(probe, self.conv, self.probe_shape.d_model, Sizes(self.probe_shape.heads, self.probe_shape.d_head))
        if self.unnormalised:
            self.notes += (f"kernel: not normalised attention: {self.unnormalised}",)
        self.reference_note = _reference_note(proj, extra)
        self.non_softmax: Optional[str] = None  # why the module is no softmax attention (properties.not_softmax)
        self.non_softmax_decided = False  # decided once, on first asking: the decision runs the module

    def _runnable(self, multiple: int) -> tuple[int, nn.Module, Convention]:
        """The smallest head-size multiple (from the constructor's) at which ordinary calls run, at it and at three times it."""
        first: Optional[str] = None
        runnable: Optional[tuple[int, nn.Module, Convention]] = None
        heads = min(2, self.options.max_heads)
        for factor in (1, 2, 4, 8):
            shape = self._shape(heads, multiple * factor)
            probe = self.module(shape)
            conv = discover(probe, shape.d_model, mask=self.options.mask, layout=self.options.layout, causal=self.options.causal,
                            sizes=Sizes(shape.heads, shape.d_head), strict=self.options.strict)
            if conv.could_not_run is None:
                conv = self._check_larger(conv, heads, 3 * multiple * factor)
            if conv.could_not_run is None and all(self._rotary_consistent(conv, heads, k * shape.d_head) for k in (1, 2, 3, 4)):
                if factor > 1:
                    why = "rejects or mis-rotates"
                    self.notes += (f"constraint found: forward {why} head size {multiple}; head sizes drawn as multiples of {multiple * factor}",)
                return multiple * factor, probe, conv
            if conv.could_not_run is None:
                runnable = runnable or (multiple * factor, probe, conv)
            first = first or conv.could_not_run
        if runnable is not None:  # rotary differs under a shift at every size: the rotary property will say so
            return runnable
        raise CouldNotRun(f"{self.target.spec}: {first}")

    def _rotary_consistent(self, conv: Convention, heads: int, d_head: int) -> bool:
        """Rotary modules only: a shift of all positions changes nothing at this head size (partial rotary needs even widths)."""
        if conv.positional != "rotary":
            return True
        shape = self._shape(heads, d_head)
        module = self.module(shape)
        query = torch.randn(2, 3, shape.d_model, generator=torch.Generator().manual_seed(1))  # (batch, seq, d_model)
        sizes = Sizes(shape.heads, shape.d_head)
        base = attempt(module, conv, query, query, sizes=sizes)
        moved = attempt(module, conv, query, query, sizes=sizes, positions=torch.arange(3) + 5)
        return not isinstance(base, str) and not isinstance(moved, str) and torch.allclose(base.output, moved.output, atol=1e-5)

    def _shape(self, heads: int, d_head: int) -> AttentionShape:
        return AttentionShape(heads, d_head, heads * d_head, 1, 1, 1, heads if self.grouped else None)

    def _check_larger(self, conv: Convention, heads: int, d_head: int) -> Convention:
        """``conv`` unless a call at head size ``d_head`` raises (rotary tables that only fit even sizes)."""
        shape = self._shape(heads, d_head)
        query = torch.randn(1, 1, shape.d_model, generator=torch.Generator().manual_seed(0))  # (batch, seq, d_model)
        keep = torch.ones(1, 1, dtype=torch.bool) if conv.mask_name else None  # all visible
        out = attempt(self.module(shape), conv, query, query, sizes=Sizes(heads, d_head), keep=keep)
        return replace(conv, could_not_run=f"could not run at head size {d_head}: {out}") if isinstance(out, str) else conv

    def module(self, shape: AttentionShape) -> nn.Module:
        key = (shape.d_model, shape.heads, shape.d_head, shape.kv_heads)
        if key not in self._modules:
            sizes = {"d_model": shape.d_model, "heads": shape.heads, "d_head": shape.d_head, "dropout": self.options.dropout,
                     "kv_heads": shape.kv_heads, "rotary_dim": shape.d_head, "max_seq": MAX_SEQ_BUILT, "layer_index": 0}
            if self.options.causal:
                sizes["causal"] = True  # --causal sets the constructor's own causal flag too
            with torch.random.fork_rng(devices=[]):
                torch.default_generator.manual_seed(self.options.seed)  # CPU only: cheap, no CUDA calls
                init = {**self.options.init, **{name: [shape.heads * r for r in ratios] for name, ratios in self.head_lists.items()}}
                module, construction = build(self.target, sizes, keep_defaults=False, init=init)
            self._constructions[key] = construction
            self._modules[key] = module.eval()
        return self._modules[key]

    def refuses(self, shape: AttentionShape) -> Optional[str]:
        """Why the module built at ``shape``'s head sizes refuses a plain call (batch 1, two tokens), or None when it runs.

        A module may only take some head counts (a fixed tensor-parallel split, kv heads equal to heads): such
        shapes are constraints of the module, not findings. Sequence lengths and batch are never excused here."""
        key = (shape.d_model, shape.heads, shape.d_head, shape.kv_heads)
        if key not in self._refusals:
            self._refusals[key] = self._plain_call(shape)
            if self._refusals[key] and self._plain_call(self.probe_shape):
                self._refusals[key] = None  # the same call fails at the sizes verify probed too: a finding, not a constraint
        return self._refusals[key]

    def _plain_call(self, shape: AttentionShape) -> Optional[str]:
        try:
            module = self.module(shape)
        except Exception as error:  # noqa: BLE001 - a constructor refusing these head sizes
            return f"built with {shape.heads} heads of size {shape.d_head}: {first_line(error)}"
        x = torch.randn(1, 2, shape.d_model, generator=torch.Generator().manual_seed(5))  # (batch, seq, d_model)
        out = attempt(module, self.conv, x, x, sizes=Sizes(shape.heads, shape.d_head))
        return out if isinstance(out, str) else None

    def fresh_copy(self, shape: AttentionShape) -> nn.Module:
        return copy.deepcopy(self.module(shape))

    def projections(self, module: nn.Module) -> Optional[Projections]:
        found = self.projection_candidates(module)
        return found[0] if found else None

    def projection_candidates(self, module: nn.Module) -> list[Projections]:
        """The projections the reference may use: one found by name or data flow, else the layouts of a packed q/k/v."""
        return self._candidates(module) if self.uses_reference else []

    def _find(self, module: nn.Module) -> Optional[Projections]:
        found = self._candidates(module)
        return found[0] if found else None

    def _candidates(self, module: nn.Module) -> list[Projections]:
        """By name (``shapecheck/projections.py``), else by the data flow traced on the probe module, else packed."""
        found = find_projections(module) or (projections_named(module, **self.flow) if self.flow else None)
        heads = module_size(module, "heads")
        width = next((p.size(-1) for p in module.parameters() if p.dim() == 2), 0)
        d_head = (module_size(module, "d_head") or width // heads) if heads else 0
        kv_heads = module_size(module, "kv_heads") or heads
        if found is not None and not (heads and found.wk.size(0) != kv_heads * d_head):  # a stacked weight chunked in
            return [with_qk_norms(module, found)]  # three equal parts is wrong for multi-query packing (GPTBigCode)
        if not heads:
            return []
        return [with_qk_norms(module, p) for p in packed_candidates(module, heads, kv_heads, d_head)]

    def _trace(self, module: nn.Module) -> Optional[dict[str, str]]:
        d_model = next((p.size(-1) for p in module.parameters() if p.dim() == 2), None)
        if d_model is None or self.conv.cross:
            return None
        query = torch.randn(2, 3, d_model, generator=torch.Generator().manual_seed(2))  # (batch, seq, d_model)
        return trace_roles(module, lambda: call(module, self.conv, query, sizes=Sizes(2, d_model // 2)))

    def _scores(self, module: nn.Module, extra: list[str]) -> tuple[Optional[float], Optional[str], list[str]]:
        """From one traced call: (the soft-cap constant, what adds a term to the scores that no projection made, the
        parameters still unexplained). The term: an ALiBi or relative-position bias from a buffer, a parameter table or
        an argument; None when no such term is non-zero."""
        shape = self.probe_shape
        query = torch.randn(2, 3, shape.d_model, generator=torch.Generator().manual_seed(2))  # (batch, seq, d_model)
        other = query if self.conv.cross else None
        sizes = Sizes(shape.heads, shape.d_head)
        try:
            _, softcap, bias = trace_scores(module, lambda: call(module, self.conv, query, other, other, sizes=sizes), tuple(extra))
        except Exception:  # noqa: BLE001 - the probe's own call ran: a trace that fails finds nothing
            return None, None, extra
        if bias is None or not bool((bias.term != 0).any()):
            return softcap, None, extra
        tables = [n for n in extra if n in bias.params]
        source = f"from {', '.join(tables)}" if tables else "from a buffer or an argument"
        term = bias.term
        varies = term.dim() >= 2 and any(term.size(d) > 1 and not bool((term == term.narrow(d, 0, 1)).all()) for d in (-1, -2))
        what = ", varying with the token positions" if varies else ""
        return softcap, f"a term no projection made is added to the scores ({source}{what})", [n for n in extra if n not in bias.params]

    def run(self, module: nn.Module, case: AttentionCase, *, query: Optional[Tensor] = None, key: Optional[Tensor] = None,
            value: Optional[Tensor] = None, keep: Optional[Tensor] = None, use_mask: bool = True, causal: bool = False,
            weights: bool = False, positions: Optional[Tensor] = None) -> Outcome:
        """Call with the case's tensors unless replaced; cross-attention passes key and value (or the memory)."""
        query = case.query if query is None else query
        key = (case.key if key is None else key) if self.conv.cross else None
        value = (case.value if value is None else value) if self.conv.cross else None
        keep = (case.keep if keep is None else keep) if use_mask and self.has_mask else None
        sizes = Sizes(case.shape.heads, case.shape.d_head)
        return call(module, self.conv, query, key, value, keep=keep, causal=causal, weights=weights, positions=positions, sizes=sizes)

    def run_cached(self, module: nn.Module, case: AttentionCase, start: int, stop: int, cache: Any, offset: int = 0) -> tuple[Tensor, Any]:
        """Tokens ``start:stop`` of the case's query through the module's KV cache, at positions ``offset + start`` on;
        returns (output, the cache to pass on)."""
        name, switch = self.cache_arguments
        kwargs = arguments(module, self.conv, case.query[:, start:stop].contiguous(), positions=torch.arange(start, stop) + offset,
                           key_positions=torch.arange(stop) + offset, sizes=Sizes(case.shape.heads, case.shape.d_head))
        kwargs[name] = new_cache(module, name) if cache is None else cache
        if switch:
            kwargs[switch] = True
        result = module(**kwargs)
        output = read_outcome(result, self.conv.batch_first, stop - start, stop).output
        if _is_cache_object(kwargs[name]):
            return output, kwargs[name]  # transformers' Cache objects are updated in place
        return output, result[1] if isinstance(result, (tuple, list)) and len(result) > 1 else None

    @property
    def cache_arguments(self) -> tuple[str, Optional[str]]:
        """(the cache argument, the use_cache switch or None); ('', None) when forward takes no cache."""
        names = [p.name for p in forward_parameters(self.module(self._shape(1, self.d_head_multiple)))]
        return pick(names, "cache") or "", pick(names, "use_cache")

    @property
    def has_mask(self) -> bool:
        return self.conv.mask_name is not None

    @property
    def causal_mode(self) -> Optional[str]:
        """'flag' (passes causal=True), 'always' (--causal, detected, or in the 4-D mask), or None."""
        return "flag" if self.conv.causal_name else ("always" if self.conv.causal_always else None)


def head_lists(init: dict[str, Any]) -> tuple[dict[str, list[int]], tuple[str, ...]]:
    """``--init`` lists for the heads role (Swin's ``num_heads=[2, 4]``): {name: each entry as a multiple of the first}
    for those the drawn head count drives, and a note for each (driven, or used as given and why)."""
    driven: dict[str, list[int]] = {}
    notes: tuple[str, ...] = ()
    for name, value in init.items():
        if not isinstance(value, (list, tuple)) or not value or constructor_role(name, 1) != "heads":
            continue
        text = f"[{', '.join(str(v) for v in value)}]"
        if all(isinstance(v, int) and not isinstance(v, bool) and v > 0 and v % value[0] == 0 for v in value):
            driven[name] = [v // value[0] for v in value]
            pattern = ", ".join("h" if r == 1 else f"{r}h" for r in driven[name])
            notes += (f"heads: --init {name}={text} is a pattern: built as [{pattern}] for each drawn head count h",)
        else:
            notes += (f"heads: --init {name}={text} used as given (its entries are not multiples of the first): "
                      "the drawn head count does not reach it",)
    return driven, notes


def _is_cache_object(value: Any) -> bool:
    return value is not None and type(value).__name__.endswith("Cache") and hasattr(value, "update")


def new_cache(module: nn.Module, name: str) -> Any:
    """An empty cache: transformers' ``DynamicCache`` for layers that take Cache objects, else None (the module makes one)."""
    params = {p.name: p for p in forward_parameters(module)}
    annotation = str(params[name].annotation) if name in params else ""
    if "Cache" in annotation or type(module).__module__.startswith("transformers."):
        from transformers import DynamicCache

        return DynamicCache()
    return None


_POSITIONAL_PARTS = ("rotary", "rope", "freqs", "alibi", "rel_pos", "relative", "pos_emb", "position")


def internal_positions(module: nn.Module) -> Optional[str]:
    """The name of a submodule or buffer through which the module adds positions itself (``rotary_emb``), or None."""
    names = [n for n, _ in module.named_modules()] + [n for n, _ in module.named_buffers()]
    return next((n for n in names if any(part in n.rsplit(".", 1)[-1].lower() for part in _POSITIONAL_PARTS)), None)


def positions_by_behaviour(module: nn.Module, conv: Convention, heads: int, d_head: int) -> Optional[str]:
    """Causal self-attention given no positions: without positions of its own, a later output is a function of the set of
    earlier tokens, so swapping two of them changes nothing; a module that rotates or embeds positions inside it differs.
    A sliding window shorter than three tokens leaves the last query no two earlier keys to swap: nothing is decided."""
    window = module_size(module, "window")
    if window is not None and window < 3:
        return None
    x = torch.randn(2, 3, heads * d_head, generator=torch.Generator().manual_seed(3))  # (batch, seq, d_model)
    swapped = x[:, [1, 0, 2]]
    sizes = Sizes(heads, d_head)
    base, moved = attempt(module, conv, x, x, sizes=sizes), attempt(module, conv, swapped, swapped, sizes=sizes)
    if isinstance(base, str) or isinstance(moved, str) or torch.allclose(base.output[:, 2], moved.output[:, 2], atol=1e-5):
        return None
    return "by behaviour: swapping two earlier tokens changed a later output"


def _scale_note(module: nn.Module, given: Optional[float]) -> tuple[str, ...]:
    if given is not None:
        return (f"scale: {given:g} (--scale)",)
    from shapecheck.testing.properties import SCALE_NAMES, declared_scale  # properties import this module

    scale = declared_scale(module)
    if scale is None:
        return ()
    name = next(n for n in SCALE_NAMES if hasattr(module, n))
    return (f"scale: {type(module).__name__} declares {name}={scale:g} at head size {module_size(module, 'd_head')}; the reference uses it",)


def _reference_note(proj: Optional[Projections], extra: list[str]) -> str:
    if proj is None:
        return (f"no projection weights found by name ({_FAMILIES}): "
                "scale and value-projection bugs cannot be detected")
    if extra:
        return (f"projections found ({proj.pattern}) but parameters {', '.join(extra[:3])} lie outside them: "
                "no reference comparison; scale and value-projection bugs cannot be detected")
    return f"reference built from {proj.pattern}"
