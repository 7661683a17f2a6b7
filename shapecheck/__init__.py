"""shapecheck: static analysis and shape verification for attention code on PyTorch.

The runtime checks (``checked``) import torch; ``shapecheck.lint`` does not, so the
names below are resolved on first use.
"""

import os as _os
import sys as _sys

if (_sys.argv[:1] == ["-m"] and _sys.path and _sys.path[0] in ("", _os.getcwd())
        and _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))) != _os.getcwd()):
    # ``python -m shapecheck``: the package is found; the working directory must not shadow the standard
    # library for what is imported next (an ``ast.py`` in a linted directory is read, never run). Kept only
    # when it is shapecheck's own checkout (its ``reference_models`` are imported from there).
    del _sys.path[0]

from shapecheck.errors import ConfigError, ShapecheckError, ShapeError, UsageError

__all__ = [
    "ConfigError",
    "ShapeError",
    "ShapecheckError",
    "UsageError",
    "audit",
    "checked",
    "checks_disabled",
    "checks_enabled",
]
__version__ = "0.1.0"

_LAZY = {
    "checked": "shapecheck.runtime",
    "checks_disabled": "shapecheck.runtime",
    "checks_enabled": "shapecheck.runtime",
    "audit": "shapecheck.auditing",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'shapecheck' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
