"""The one catalogue of model kinds and released presets that report, audit, prove and verify read.

- ``KINDS[name]``: a model family shapecheck can build from ``Sizes`` (``mha``,
  ``encoder``, ``bert``, ``gpt`` ...): its builder, its inputs, how to run it.
- ``PRESETS[name]``: a released model's sizes (``bert-base``, ``gpt2``,
  ``transformer-base`` ...) and the kind that builds it, with its source.

This package is the only place that imports ``reference_models`` to build a
model by name. Adding a preset here makes it available to every command that
takes ``--preset``; ``get_preset``/``get_kind`` fail with one line naming the choices.
"""

from shapecheck.catalog.kinds import KINDS, Kind, get_kind
from shapecheck.catalog.presets import FAMILIES, FAMILY_DEFAULTS, PRESETS, Preset, family, get_preset, preset_sizes
from shapecheck.catalog.sizes import PROBE, Sizes, make_sizes

__all__ = [
    "FAMILIES", "FAMILY_DEFAULTS", "KINDS", "PRESETS", "PROBE", "Kind", "Preset", "Sizes",
    "family", "get_kind", "get_preset", "make_sizes", "preset_sizes",
]
