"""Constraints a constructor imposes on the config: ``d_model % heads == 0``.

Export sees the module at one width, so it cannot tell which widths the code
accepts. The constructor (or the config class) is asked instead, on the meta
device so nothing is allocated: it must accept ``d_model + heads`` and reject
``d_model + 1`` for the divisibility to be the code's rule.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any, Optional

import torch
from torch import nn

from shapecheck.runtime import config_axes

Rebuild = Callable[[int, int], Any]  # (d_model, heads) -> a module or config


def _builds(rebuild: Rebuild, d_model: int, heads: int) -> bool:
    try:
        with torch.device("meta"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rebuild(d_model, heads)
    except Exception:  # noqa: BLE001 - a refusal is what is being probed
        return False
    return True


def _config_rebuild(module: nn.Module) -> Optional[Rebuild]:
    config = getattr(module, "config", None)
    if not dataclasses.is_dataclass(config):
        return None
    return lambda d_model, heads: type(config)(d_model=d_model, heads=heads)  # type: ignore[misc]


def divisibility_constraints(
    module: nn.Module, *, rebuild: Optional[Rebuild] = None, d_model: Optional[int] = None, heads: Optional[int] = None
) -> list[str]:
    """``['d_model % heads == 0']`` when building with a width that is not a multiple of heads fails."""
    axes = config_axes(module)
    d_model, heads = d_model or axes.get("d_model"), heads or axes.get("heads")
    rebuild = rebuild or _config_rebuild(module)
    if rebuild is None or d_model is None or heads is None or heads < 2:
        return []
    if _builds(rebuild, d_model + heads, heads) and not _builds(rebuild, d_model + 1, heads):
        return ["d_model % heads == 0"]
    return []
