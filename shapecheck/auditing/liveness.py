"""Dead parameters: those no gradient reaches in one forward/backward pass on a small input.

The pass runs on a small instance (the "probe"), in eval mode, with every
parameter temporarily requiring grad (so a frozen one is still checked for use)
and ``torch.autograd.grad(..., allow_unused=True)``, which leaves ``.grad``
untouched: a parameter whose gradient is ``None`` never entered the graph (a
layer defined but not used in ``forward``). The loss weights each output
element by a fixed random number, so a final LayerNorm (whose outputs sum to a
constant) does not hide the layers before it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, Optional

import torch
from torch import Tensor, nn

from shapecheck.auditing.inputs import Inputs, synthesize
from shapecheck.auditing.result import Liveness, Parameter
from shapecheck.errors import ShapecheckError, first_line


def _tensors(value: Any) -> Iterator[Tensor]:
    """Floating tensors in a forward's output: tensors, tuples, lists, dicts, dataclasses (ModelOutput)."""
    if isinstance(value, Tensor):
        if value.is_floating_point():
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            yield from _tensors(getattr(value, item.name))


def _loss(outputs: list[Tensor]) -> Tensor:
    generator = torch.Generator().manual_seed(0)
    total = outputs[0].new_zeros((), dtype=torch.float64)
    for out in outputs:
        weights = torch.randn(out.shape, generator=generator, dtype=torch.float64)
        total = total + (out.double() * weights).sum()
    return total


def unused_parameters(probe: nn.Module, inputs: Inputs) -> list[str]:
    """Names (in ``probe``) of the parameters the forward pass on ``inputs`` does not reach."""
    named = list(probe.named_parameters())
    flags, training = [p.requires_grad for _, p in named], probe.training
    try:
        for _, param in named:
            param.requires_grad_(True)
        probe.eval()
        with torch.enable_grad():
            floating = list(_tensors(probe(*inputs.args, **inputs.kwargs)))
            if not floating:
                raise ValueError("forward returned no floating-point tensor")
            outputs = [out for out in floating if out.requires_grad]
            if not outputs:  # an output that no parameter reaches (zeros, the input itself): every parameter is dead
                return [name for name, _ in named]
            grads = torch.autograd.grad(_loss(outputs), [p for _, p in named], allow_unused=True)
    finally:
        for (_, param), flag in zip(named, flags):
            param.requires_grad_(flag)
        probe.train(training)
    return [name for (name, _), grad in zip(named, grads) if grad is None]


def check(probe: nn.Module, model: nn.Module, inputs: Optional[Inputs] = None, label: str = "") -> Liveness:
    """Run the pass on ``probe`` and report its unused parameters by their names and sizes in ``model``."""
    try:
        inputs = inputs or synthesize(probe)
        unused = unused_parameters(probe, inputs)
    except KeyboardInterrupt:
        return Liveness(False, "not run: interrupted (Ctrl-C)", interrupted=True)
    except ShapecheckError as error:
        return Liveness(False, f"not run: {error}")
    except Exception as error:  # noqa: BLE001 - the user's forward raises anything
        return Liveness(False, f"not run: the forward pass raised {first_line(error)}")
    sizes = {name: (p.numel(), not p.requires_grad) for name, p in model.named_parameters()}
    probe_sizes = dict((n, p.numel()) for n, p in probe.named_parameters())
    dead = tuple(Parameter(n, *sizes.get(n, (probe_sizes[n], False))) for n in unused)
    where = label or f"{type(probe).__name__}"
    return Liveness(True, f"forward/backward on {where} with {inputs.describe()}", dead)
