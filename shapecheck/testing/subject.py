"""The module under test: a factory, its calling convention and the options of one verify run."""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

import torch
from torch import Tensor, nn

from shapecheck.errors import UsageError
from shapecheck.target import Construction, Target, build
from shapecheck.testing.adapt import Convention, Layout, MaskOption, Outcome, call, discover
from shapecheck.testing.strategies import AttentionCase, AttentionShape
from shapecheck.projections import STYLES
from shapecheck.testing.weights import Projections, find_projections, unexplained_parameters

_FAMILIES = ", ".join(style.pattern for style in STYLES if style.verifiable)

MaskedRows = Literal["finite", "nan", "zeros", "uniform"]


@dataclass(frozen=True)
class VerifyOptions:
    """Everything a verify run can be told; the CLI's options map onto these one to one."""

    layout: Optional[Layout] = None  # None: read ``batch_first`` where the module has it, else batch-first
    mask: MaskOption = "auto"
    causal: bool = False  # the module is causal by construction: assert it
    max_examples: int = 50
    seed: int = 0
    strict: bool = False  # fully masked rows fail instead of warning
    dropout: float = 0.1  # built with dropout > 0 so eval-mode determinism means something
    masked_rows: MaskedRows = "finite"  # declared policy for query rows with every key masked
    fail_fast: bool = False  # stop at the first failing property
    properties: Optional[tuple[str, ...]] = None  # None: all
    max_heads: int = 3
    max_d_head: int = 4
    max_batch: int = 3
    max_seq: int = 5
    init: dict[str, Any] = field(default_factory=dict)


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
    """Builds the module per (d_model, heads), caches it in eval mode, and calls it batch-first."""

    def __init__(self, target: Target, options: VerifyOptions) -> None:
        self.target, self.options = target, options
        self._modules: dict[tuple[int, int], nn.Module] = {}
        self.construction: Optional[Construction] = None
        heads = min(2, options.max_heads)
        probe = self.module(AttentionShape(heads, 2, 2 * heads, 1, 1, 1))
        self.conv: Convention = discover(probe, 2 * heads, mask=options.mask, layout=options.layout, causal=options.causal)
        proj = find_projections(probe)
        extra = unexplained_parameters(probe, proj) if proj else []
        self.uses_reference = proj is not None and not extra
        self.reference_note = _reference_note(proj, extra)

    def module(self, shape: AttentionShape) -> nn.Module:
        key = (shape.d_model, shape.heads)
        if key not in self._modules:
            with torch.random.fork_rng(devices=[]):
                torch.default_generator.manual_seed(self.options.seed)  # CPU only: cheap, no CUDA calls
                sizes = {"d_model": shape.d_model, "heads": shape.heads, "dropout": self.options.dropout}
                module, construction = build(self.target, sizes, keep_defaults=False, init=self.options.init)
            self.construction = self.construction or construction
            self._modules[key] = module.eval()
        return self._modules[key]

    def fresh_copy(self, shape: AttentionShape) -> nn.Module:
        return copy.deepcopy(self.module(shape))

    def projections(self, module: nn.Module) -> Optional[Projections]:
        return find_projections(module) if self.uses_reference else None

    def run(self, module: nn.Module, case: AttentionCase, *, query: Optional[Tensor] = None, key: Optional[Tensor] = None,
            value: Optional[Tensor] = None, keep: Optional[Tensor] = None, use_mask: bool = True, causal: bool = False,
            weights: bool = False) -> Outcome:
        """Call with the case's tensors unless replaced; cross-attention passes key and value."""
        query = case.query if query is None else query
        key = (case.key if key is None else key) if self.conv.cross else None
        value = (case.value if value is None else value) if self.conv.cross else None
        keep = (case.keep if keep is None else keep) if use_mask and self.has_mask else None
        return call(module, self.conv, query, key, value, keep=keep, causal=causal, weights=weights)

    @property
    def has_mask(self) -> bool:
        return self.conv.mask_name is not None

    @property
    def causal_mode(self) -> Optional[str]:
        """'flag' (passes causal=True), 'always' (--causal), or None."""
        return "flag" if self.conv.causal_name else ("always" if self.conv.causal_always else None)


def _reference_note(proj: Optional[Projections], extra: list[str]) -> str:
    if proj is None:
        return (f"no projection weights found by name ({_FAMILIES}): "
                "scale and value-projection bugs cannot be detected")
    if extra:
        return (f"projections found ({proj.pattern}) but parameters {', '.join(extra[:3])} lie outside them: "
                "no reference comparison; scale and value-projection bugs cannot be detected")
    return f"reference built from {proj.pattern}"

