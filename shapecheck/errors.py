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


def first_line(error: BaseException) -> str:
    """``ValueError: the first line of the message`` (the type alone for an empty message): how every
    one-line report names an exception the user's code raised."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
