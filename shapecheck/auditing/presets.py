"""Released models by name (``--preset bert-base``): the reference module on the meta device and a small probe.

Sizes and builders come from ``shapecheck.counting`` (the same presets ``shapecheck
report`` uses). The probe keeps the layer count, so parameter names match, and
shrinks every width: d_model 16, 2 heads, d_ff 32, vocab 97, 16 positions.
"""

from __future__ import annotations

from typing import Optional

from torch import nn

from shapecheck.counting.models import MODELS, Sizes
from shapecheck.counting.params import on_meta
from shapecheck.counting.presets import PRESETS
from shapecheck.errors import UsageError

PROBE = dict(d_model=16, heads=2, d_ff=32, vocab=97, max_seq=16)


def _sizes(values: dict, d_model: Optional[int] = None, heads: Optional[int] = None) -> Sizes:
    values = {**values, **({"d_model": d_model} if d_model else {}), **({"heads": heads} if heads else {})}
    if values["d_model"] % values["heads"]:
        raise UsageError(f"--d-model {values['d_model']} is not divisible by --heads {values['heads']}")
    d_head = values["d_model"] // values["heads"]
    return Sizes(d_k=d_head, d_v=d_head, **values)


def preset(name: str, d_model: Optional[int] = None, heads: Optional[int] = None) -> tuple[nn.Module, nn.Module, str]:
    """(the model on the meta device, a small real instance, a description) for preset ``name``."""
    if name not in PRESETS:
        raise UsageError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    kind, values = PRESETS[name]
    sizes, small = _sizes(values(), d_model, heads), _sizes({**values(), **PROBE})
    build = MODELS[kind].build
    model = on_meta(lambda: build(sizes))
    label = f"{type(model).__name__} ({name}: d_model={sizes.d_model}, heads={sizes.heads}, layers={sizes.layers})"
    return model, build(small), label
