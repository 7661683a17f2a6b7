"""Correct attention code from installed packages produces no error or warning (skipped when not installed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from shapecheck.lint import lint_file

FILES = {
    "transformers": ["models/bert/modeling_bert.py", "models/gpt2/modeling_gpt2.py", "models/llama/modeling_llama.py"],
    "torch": ["nn/modules/activation.py", "nn/modules/transformer.py", "nn/functional.py"],
}


def _installed(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)  # locates the package without importing it
    if spec is None or spec.origin is None:
        pytest.skip(f"{package} is not installed")
    path = Path(spec.origin).parent / relative
    if not path.is_file():
        pytest.skip(f"{package} has no {relative}")
    return path


@pytest.mark.parametrize("package,relative", [(p, r) for p, rs in FILES.items() for r in rs])
def test_installed_attention_code_is_clean(package, relative):
    path = _installed(package, relative)
    serious = [f for f in lint_file(str(path)) if f.severity in ("error", "warning")]
    assert serious == []
