"""Helpers shared by the subcommands: failing with exit 2, printing to stdout/stderr."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Callable, NoReturn

import typer

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def usage_error(message: str) -> NoReturn:
    """Print ``message`` on one line to stderr and exit 2."""
    typer.echo(f"shapecheck: error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


CACHE_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR",)  # torch.compile/export's on-disk caches (Triton's live inside it)


def private_compile_caches() -> Callable[[], None]:
    """Point torch's compile caches at a fresh temporary directory (unless the user chose one) and return
    the function that removes it, so no ``torchinductor_*`` is left in TMPDIR after a run."""
    if any(name in os.environ for name in CACHE_VARIABLES):
        return lambda: None
    directory = tempfile.mkdtemp(prefix="shapecheck-cache-")
    for name in CACHE_VARIABLES:
        os.environ[name] = directory
    return lambda: shutil.rmtree(directory, ignore_errors=True)
