"""Helpers shared by the subcommands: failing with exit 2, printing to stdout/stderr."""

from __future__ import annotations

from typing import NoReturn, Optional

import typer

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def usage_error(message: str) -> NoReturn:
    """Print ``message`` on one line to stderr and exit 2."""
    typer.echo(f"shapecheck: error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def require_choice(option: str, value: Optional[str], choices: tuple[str, ...]) -> None:
    """Exit 2 naming the valid choices unless ``value`` (when given) is one of them."""
    if value is not None and value not in choices:
        usage_error(f"{option} {value!r} is not one of: {', '.join(choices)}")


def require_at_least(option: str, value: Optional[int], minimum: int) -> None:
    """Exit 2 unless ``value`` (when given) is at least ``minimum``."""
    if value is not None and value < minimum:
        usage_error(f"{option} {value} must be at least {minimum}")
