"""Comparing outputs for the properties: one wording for a difference, NaN reported as NaN."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import torch
from hypothesis import strategies as st
from torch import Tensor

Draw = Callable[[st.SearchStrategy, str], Any]  # draw(strategy, label): a value recorded in the counterexample
ATOL, RTOL = 1e-4, 1e-3


class Skip(Exception):
    """Raised by a check that cannot drive the module for its property (no parameters, a protocol it cannot call):
    the property is reported skipped with this reason, never failed."""


def _where(mask: Tensor) -> list[int]:
    return [int(i) for i in torch.unravel_index(mask.flatten().int().argmax(), mask.shape)] if mask.dim() else []


def diff(actual: Tensor, expected: Tensor) -> Optional[str]:
    """None when close; else 'max |Δ| = 0.31 at [1, 2, 0]', or where NaN appears and what was expected there."""
    actual, expected = actual.detach().double(), expected.detach().double()
    if actual.shape != expected.shape:
        return f"shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    nan = torch.isnan(actual) | torch.isnan(expected)
    if nan.any():
        at = _where(nan)
        a, e = actual[tuple(at)].item(), expected[tuple(at)].item()
        if not (torch.isnan(actual) == torch.isnan(expected)).all() or not torch.isclose(actual[~nan], expected[~nan], rtol=RTOL, atol=ATOL).all():
            return f"NaN at {at} (got {a:.3g}, expected {e:.3g})"
        return f"NaN at {at} in both the output and the expected value"
    bad = ~torch.isclose(actual, expected, rtol=RTOL, atol=ATOL)
    if not bad.any():
        return None
    delta = (actual - expected).abs()
    return f"max |Δ| = {delta[bad].max().item():.3g} at {_where(delta * bad == (delta * bad).max())}"
