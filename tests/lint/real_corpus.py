"""The real corpus: attention code of installed packages, read from their installed sources (never copied here).

Each package is located with ``importlib.util.find_spec`` without importing it; a
package that is not installed contributes no file.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

# package -> glob patterns under its installed directory
PACKAGES: dict[str, tuple[str, ...]] = {
    "transformers": ("models/*/modeling_*.py",),
    "timm": ("models/*.py", "layers/*.py"),
    "x_transformers": ("*.py",),
    "vit_pytorch": ("*.py",),
    "whisper": ("*.py",),
    "litgpt": ("*.py",),
    "diffusers": ("models/attention*.py", "models/transformers/*.py"),
    "open_clip": ("*.py",),
    "torch": ("nn/modules/*.py", "nn/functional.py"),
}


def package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def files(package: str) -> list[Path]:
    """The package's corpus files, sorted; empty when it is not installed."""
    root = package_dir(package)
    if root is None:
        return []
    found = {p for pattern in PACKAGES[package] for p in root.glob(pattern) if p.name != "__init__.py"}
    return sorted(found)


def all_files() -> list[Path]:
    return [p for package in PACKAGES for p in files(package)]
