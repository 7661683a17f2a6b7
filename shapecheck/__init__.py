"""shapecheck: static analysis and shape verification for attention code on PyTorch."""

from shapecheck.checked import checked, checks_disabled, checks_enabled
from shapecheck.errors import ConfigError, ShapecheckError, ShapeError, UsageError

__all__ = [
    "ConfigError",
    "ShapeError",
    "ShapecheckError",
    "UsageError",
    "checked",
    "checks_disabled",
    "checks_enabled",
]
__version__ = "0.1.0"
