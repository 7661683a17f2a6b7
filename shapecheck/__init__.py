"""shapecheck: static analysis and shape verification for attention code on PyTorch."""

from shapecheck.checked import checked, checks_disabled, checks_enabled
from shapecheck.errors import ConfigError, ShapecheckError, ShapeError, UsageError

__all__ = [
    "audit",
    "ConfigError",
    "ShapeError",
    "ShapecheckError",
    "UsageError",
    "checked",
    "checks_disabled",
    "checks_enabled",
]
__version__ = "0.1.0"


def __getattr__(name: str):  # noqa: ANN202 - lazy: importing the audit pulls in sympy and the counters
    if name == "audit":
        from shapecheck.auditing import audit

        return audit
    raise AttributeError(f"module 'shapecheck' has no attribute {name!r}")
