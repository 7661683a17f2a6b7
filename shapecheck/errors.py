"""The exceptions shapecheck raises.

Each specific error also inherits the builtin people already catch:
a wrong shape is a ``TypeError``, a bad configuration value a ``ValueError``.
"""

from __future__ import annotations


class ShapecheckError(Exception):
    """Root of every error shapecheck raises on purpose."""


class ShapeError(ShapecheckError, TypeError):
    """A tensor's shape or dtype contradicts its annotation."""


class ConfigError(ShapecheckError, ValueError):
    """A configuration value is out of range or inconsistent with another."""


class UsageError(ShapecheckError, ValueError):
    """A command-line or API argument that cannot be acted on (bad target, bad option)."""
