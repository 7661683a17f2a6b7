"""Helpers for the reliability tests: the misbehaving fixture modules, copied into a temporary directory
whose contents are compared before and after each run; the CLI run in-process or, where the misbehaviour
needs a process of its own (os._exit, fork, sys.path, file descriptor 1), as ``python -m shapecheck``."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MODULES = Path(__file__).parent / "modules"
REPO = Path(__file__).resolve().parents[2]


def snapshot(directory: Path) -> dict[str, str]:
    """Every file and folder under ``directory`` (hidden ones too) with a digest of its contents."""
    found = {}
    for path in sorted(directory.rglob("*")):
        if "__pycache__" in path.parts:
            continue  # Python's own, from importing the fixtures in this process; shapecheck writes none
        found[str(path.relative_to(directory))] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return found


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A temporary directory holding the fixture modules (the runs' working directory) and an empty TMPDIR."""
    work = tmp_path / "work"
    shutil.copytree(MODULES, work, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tmp").mkdir()
    return work


def run_module(args: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """``python -m shapecheck ARGS`` in ``cwd`` with this checkout first on the path and TMPDIR next to ``cwd``."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(cwd.parent / "tmp"), "COLUMNS": "100"}
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    return subprocess.run([sys.executable, "-m", "shapecheck", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
