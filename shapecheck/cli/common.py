"""Helpers shared by the subcommands: failing with exit 2, printing to stdout/stderr."""

from __future__ import annotations

from typing import NoReturn

import typer

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def usage_error(message: str) -> NoReturn:
    """Print ``message`` on one line to stderr and exit 2."""
    typer.echo(f"shapecheck: error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)
