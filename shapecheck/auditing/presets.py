"""Released models by name (``--preset bert-base``): the reference module on the meta device and a small probe.

Sizes and builders come from ``shapecheck.catalog`` (the presets every command reads).
The probe keeps the layer count, so parameter names match, and shrinks every width.
"""

from __future__ import annotations

from typing import Optional

from torch import nn

from shapecheck.catalog import get_kind, get_preset, preset_sizes
from shapecheck.counting.params import on_meta


def preset(name: str, d_model: Optional[int] = None, heads: Optional[int] = None) -> tuple[nn.Module, nn.Module, str]:
    """(the model on the meta device, a small real instance, a description) for preset ``name``."""
    build = get_kind(get_preset(name).kind).build
    sizes = preset_sizes(name, d_model=d_model, heads=heads)
    model = on_meta(lambda: build(sizes))
    label = f"{type(model).__name__} ({name}: d_model={sizes.d_model}, heads={sizes.heads}, layers={sizes.layers})"
    return model, build(preset_sizes(name, probe=True)), label
