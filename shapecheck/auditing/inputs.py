"""Inputs for one forward pass of a small instance, read from ``forward``'s signature.

A module reading hidden states is called as the convention probe decided
(``shapecheck.convention``: layout, self- or cross-attention, required masks and
positional inputs) at batch 2, length 3. Where it could not decide, required tensor
arguments get a float tensor of shape (2, 3, width), which both
batch-first and sequence-first modules accept; arguments annotated
``Int[Tensor, ...]`` or named like token ids get integer ids in range of every
embedding table. A module whose arguments all have defaults but which takes
token ids (transformers' ``BertModel(input_ids=None, ...)``) gets the ids.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from torch import Tensor, nn

from shapecheck.auditing.projections import as_projection, is_linear
from shapecheck.convention import decide
from shapecheck.errors import UsageError
from shapecheck.images import image_input
from shapecheck.target import forward_parameters

ID_NAMES = ("input_ids", "ids", "idx", "token_ids", "tokens", "src_ids", "tgt_ids")
TABLE_ID_NAMES = ("src", "tgt", "input", "x")  # ids only when the module has embedding tables
WIDTH_ATTRS = {"key": "kdim", "value": "vdim"}  # nn.MultiheadAttention(kdim=, vdim=)
BATCH, SEQ = 2, 3


@dataclass(frozen=True)
class Inputs:
    """Arguments for ``module(*args, **kwargs)`` and a description of them."""

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        items = [_describe(v) for v in self.args] + [f"{k}={_describe(v)}" for k, v in self.kwargs.items()]
        return ", ".join(items)


def _describe(value: Any) -> str:
    if isinstance(value, Tensor):
        kind = "float" if value.is_floating_point() else "complex" if value.is_complex() else "bool" if value.dtype == torch.bool else "ids"
        return f"{kind} {tuple(value.shape)}"
    return repr(value) if isinstance(value, (bool, int, float, type(None))) else type(value).__name__


def _width(module: nn.Module) -> int:
    for _, child in module.named_modules():
        if is_linear(child):
            return as_projection("", child).d_in  # type: ignore[union-attr]
        shape = getattr(child, "normalized_shape", None)
        if shape:
            return int(shape[-1])
    raise UsageError(f"{type(module).__name__}: no Linear or LayerNorm to read the input width from; pass inputs=")


def _rows(module: nn.Module) -> int:
    tables = [m.num_embeddings for m in module.modules() if isinstance(m, nn.Embedding)]
    return min(tables) if tables else 2


def _wants_ids(param: inspect.Parameter, module: nn.Module) -> bool:
    dtypes = getattr(param.annotation, "dtypes", None) or ()
    if any(str(d).startswith("int") for d in dtypes) and not any(str(d).startswith("float") for d in dtypes):
        return True
    has_tables = any(isinstance(m, nn.Embedding) for m in module.modules())
    return param.name in ID_NAMES or (has_tables and param.name in TABLE_ID_NAMES)


def _parameters(module: nn.Module) -> list[inspect.Parameter]:
    return forward_parameters(module) or []


def _planned(module: nn.Module) -> Optional[Inputs]:
    """prove's input plan at batch 2, length 3 (with ``use_cache=False``), or None when it cannot plan one."""
    from shapecheck.prove.inputs import plan_inputs

    try:
        plan = plan_inputs(module)
    except UsageError:
        return None
    return Inputs((), plan.call(plan.examples({"batch": BATCH, "seq": SEQ, "seq_q": SEQ, "seq_k": SEQ})))


def synthesize(module: nn.Module, generator: Optional[torch.Generator] = None) -> Inputs:
    """Arguments for one forward pass; raises UsageError when the signature asks for what it cannot make."""
    generator = generator or torch.Generator().manual_seed(0)
    params = _parameters(module)
    required = [p for p in params if p.default is inspect.Parameter.empty]
    if not required:  # transformers: every argument optional; the inputs prove would build (ids, pixels, audio, decoder ids)
        planned = _planned(module)
        if planned is not None:
            return planned
        ids = [p for p in params if _wants_ids(p, module)]
        required = ids[:1] or params[:1]
    if not required:
        raise UsageError(f"{type(module).__name__}.forward takes no argument to feed; pass inputs=")
    decision = decide(module)
    if decision.runs:  # hidden states as the convention probe decided: layout, self/cross, masks, positional inputs
        return Inputs((), decision.call(module, BATCH, SEQ, "cpu", generator=generator))
    kwargs: dict[str, Any] = {}
    image = image_input(module)
    for param in required:
        if image is not None and param is params[0]:
            kwargs[param.name] = torch.randn(BATCH, *image, generator=generator)
        elif _wants_ids(param, module):
            kwargs[param.name] = torch.randint(0, _rows(module), (BATCH, SEQ), generator=generator)
        else:
            width = getattr(module, WIDTH_ATTRS.get(param.name, ""), None) or _width(module)
            kwargs[param.name] = torch.randn(BATCH, SEQ, width, generator=generator)
    positional = [p for p in required if p.kind is inspect.Parameter.POSITIONAL_ONLY]
    return Inputs(tuple(kwargs.pop(p.name) for p in positional), kwargs)
