"""Building a catalogue preset: on the meta device at any size, or with real weights only under a budget.

Report and audit count on meta (shapes, no storage). Commands that run a model with
real weights (prove; audit's small liveness probe) call ``build_real``, which counts
the preset on meta first and refuses, in one line, a model above ``REAL_BUDGET``;
``require_small`` is that check, for a TARGET built on meta too (prove).
"""

from __future__ import annotations

from typing import Optional

from torch import nn

from shapecheck.catalog.kinds import get_kind
from shapecheck.catalog.presets import get_preset, preset_sizes
from shapecheck.catalog.sizes import Sizes
from shapecheck.errors import UsageError

REAL_BUDGET = 2**28  # parameters a command may build with real weights: 1 GiB of float32


def build_on_meta(name: str, sizes: Optional[Sizes] = None) -> nn.Module:
    """The preset ``name`` (at ``sizes``, default its own) on the meta device: no weights allocated."""
    from shapecheck.counting.params import on_meta

    build = get_kind(get_preset(name).kind).build
    built = sizes or preset_sizes(name)
    return on_meta(lambda: build(built))


def require_small(on_meta: nn.Module, subject: str, instead: str) -> None:
    """A one-line ``UsageError`` when ``on_meta`` (the model built on meta) has more than ``REAL_BUDGET`` parameters."""
    from shapecheck.counting.params import count_parameters

    count = count_parameters(on_meta)
    if count > REAL_BUDGET:
        raise UsageError(f"{subject} would build {count:,} parameters with real weights (more than 2^28); {instead}")


def build_real(name: str, sizes: Optional[Sizes] = None, *, command: str) -> nn.Module:
    """The preset with real weights, or a one-line ``UsageError`` when it has more than ``REAL_BUDGET`` parameters."""
    built = sizes or preset_sizes(name)
    require_small(build_on_meta(name, built), f"{command} --preset {name}",
                  f"count it on meta with `shapecheck report --preset {name}` or `shapecheck audit --preset {name}`, "
                  f"or give a TARGET at a smaller size")
    return get_kind(get_preset(name).kind).build(built)
