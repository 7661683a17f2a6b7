"""Image inputs: the (channels, height, width) a vision module's first argument takes, read from its stem.

A module whose first layer (the first Conv2d, Linear or Embedding it registers) is a ``Conv2d`` takes an
image: ``conv.in_channels`` channels, at the size the module declares (``img_size`` / ``image_size`` on it
or on a submodule, an int or a pair: timm's ``PatchEmbed``, vit-pytorch, open_clip), else a square of
eight strides of the stem. transformers' vision models are shaped by their config instead
(``pixel_values``: ``prove.inputs.CONFIG_SHAPED``).
"""

from __future__ import annotations

from typing import Optional

from torch import nn

SIZE_ATTRIBUTES = ("img_size", "image_size")


def image_input(module: nn.Module) -> Optional[tuple[int, int, int]]:
    """``(channels, height, width)`` of the image ``module`` takes first, or None for a non-image module."""
    stem = next((m for m in module.modules() if isinstance(m, (nn.Conv2d, nn.Linear, nn.Embedding))), None)
    if not isinstance(stem, nn.Conv2d):
        return None
    declared = _declared_size(module)
    if declared is not None:
        return (stem.in_channels, *declared)
    side = 8 * max(stem.stride) * max(stem.kernel_size)
    return stem.in_channels, side, side


def _declared_size(module: nn.Module) -> Optional[tuple[int, int]]:
    for child in module.modules():
        for name in SIZE_ATTRIBUTES:
            size = getattr(child, name, None)
            if isinstance(size, int) and size > 0:
                return size, size
            if isinstance(size, (tuple, list)) and len(size) == 2 and all(isinstance(s, int) and s > 0 for s in size):
                return int(size[0]), int(size[1])
    return None
