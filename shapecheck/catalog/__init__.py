"""The one catalogue of model kinds and released presets that report, audit, prove and verify read.

- ``KINDS[name]``: a model family shapecheck can build from ``Sizes`` (``mha``,
  ``encoder``, ``bert``, ``gpt`` ...): its builder, its inputs, how to run it.
- ``PRESETS[name]``: a released model's sizes (``bert-base``, ``gpt2``,
  ``transformer-base`` ... and the released LLMs (``llama-2-7b`` ... ``mixtral-8x7b``)
  and the kind that builds it, with its source.
- ``build_on_meta(name)``: a preset on the meta device (any size); ``build_real(name, command=...)``:
  with real weights, refused in one line above ``REAL_BUDGET`` parameters (counted on meta first).

This package is the only place that imports ``reference_models`` to build a
model by name. Adding a preset here makes it available to every command that
takes ``--preset``; ``get_preset``/``get_kind`` fail with one line naming the choices.
"""

from shapecheck.catalog.build import REAL_BUDGET, build_on_meta, build_real, require_small
from shapecheck.catalog.kinds import KINDS, Kind, get_kind
from shapecheck.catalog.presets import (
    FAMILIES, FAMILY_DEFAULTS, PRESETS, Preset, family, get_preset, preset_sizes,
)
from shapecheck.catalog.sizes import PROBE, Sizes, make_sizes

__all__ = [
    "FAMILIES", "FAMILY_DEFAULTS", "KINDS", "PRESETS", "PROBE", "REAL_BUDGET", "Kind", "Preset", "Sizes",
    "build_on_meta", "build_real", "family", "require_small", "get_kind", "get_preset", "make_sizes", "preset_sizes",
]
