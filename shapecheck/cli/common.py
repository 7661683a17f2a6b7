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


def private_temporary_files() -> Callable[[], None]:
    """Give the run a fresh temporary directory and return the function that removes it.

    Everything the run puts in the temporary directory (torch's compile caches, verify's hypothesis
    storage, files the user's module makes with ``tempfile``) lands inside it: ``TMPDIR`` and
    ``tempfile.tempdir`` point there, and so do torch's compile caches unless the user chose where they
    go. The supervising parent removes it once the run has ended, however it ended (``os._exit`` too),
    so nothing is left in TMPDIR.
    """
    directory = tempfile.mkdtemp(prefix="shapecheck-run-")
    os.environ["TMPDIR"] = tempfile.tempdir = directory
    for name in CACHE_VARIABLES:
        os.environ.setdefault(name, directory)
    return lambda: shutil.rmtree(directory, ignore_errors=True)
