"""How a report calls the model: its inputs at a batch and length, and the call itself.

``signature_feed(module)`` reads the forward signature (``shapecheck.counting.inputs``: token
ids for language models, hidden states for blocks); a catalogue kind brings its own
(``kind_feed``: the reference models' inputs and run, e.g. GPT-2's tied head after the stack).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn


@dataclass(frozen=True)
class Feed:
    """``inputs(batch, seq, device, grad)`` -> (args, kwargs); ``call(module, args, kwargs)`` runs one forward."""

    inputs: Callable[[int, int, str, bool], tuple[tuple, dict]]
    call: Callable[[nn.Module, tuple, dict], Any] = lambda module, args, kwargs: module(*args, **kwargs)

    def runner(self, module: nn.Module, batch: int, seq: int, device: str, grad: bool = False) -> Callable[[], Any]:
        args, kwargs = self.inputs(batch, seq, device, grad)
        return lambda: self.call(module, args, kwargs)


def signature_feed(module: nn.Module) -> Feed:
    from shapecheck.counting.inputs import make_inputs

    return Feed(lambda batch, seq, device, grad: make_inputs(module, batch, seq, device, grad))


def kind_feed(kind: Any, sizes: Any) -> Feed:
    """A catalogue kind's own inputs and run (``shapecheck.catalog.KINDS``)."""
    def inputs(batch: int, seq: int, device: str, grad: bool) -> tuple[tuple, dict]:
        args = kind.inputs(sizes, batch, seq, torch.device(device))
        return tuple(_trainable(a) if grad else a for a in args), {}

    return Feed(inputs, lambda module, args, kwargs: kind.run(module, args))


def _trainable(value: Any) -> Any:
    """Hidden states a stack is fed in training come from a trained embedding: they need a gradient, so the
    first layer's input projections compute dX as every other layer's do (token ids stay as they are)."""
    if isinstance(value, torch.Tensor) and value.is_floating_point() and not value.requires_grad:
        return value.detach().requires_grad_(True)
    return value
