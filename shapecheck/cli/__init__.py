"""The ``shapecheck`` command line: a thin layer over library functions that return data.

Each subcommand lives in its own module here and exposes ``register(app)``.
Exit codes: 0 success, 1 findings, 2 bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import importlib
import sys

import typer
from typer.core import TyperGroup

from shapecheck.errors import ShapecheckError

# Subcommand modules, in the order ``shapecheck --help`` lists them.
COMMANDS: tuple[str, ...] = ("report", "prove", "verify", "audit", "lint")


class _Group(TyperGroup):
    """Turns any ShapecheckError a command lets escape into one line and exit code 2."""

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except ShapecheckError as error:
            typer.echo(f"shapecheck: error: {error}", err=True)
            raise typer.Exit(2) from None


def build_app(commands: tuple[str, ...] = COMMANDS) -> typer.Typer:
    """The CLI with the given subcommands registered (their modules are imported here)."""
    cli = typer.Typer(
        cls=_Group,
        name="shapecheck",
        help="Static analysis and shape verification for attention code.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )

    @cli.callback()
    def _group() -> None:
        """Static analysis and shape verification for attention code."""

    for name in commands:
        importlib.import_module(f"shapecheck.cli.{name}").register(cli)
    return cli


def __getattr__(name: str) -> typer.Typer:
    """``app``: the full CLI, built on first use (tests drive it with typer's CliRunner)."""
    if name == "app":
        globals()["app"] = built = build_app()
        return built
    raise AttributeError(f"module 'shapecheck.cli' has no attribute {name!r}")


def main() -> None:
    """Console-script entry point: imports only the subcommand asked for, so ``lint`` starts fast."""
    asked = sys.argv[1] if len(sys.argv) > 1 else None
    build_app((asked,) if asked in COMMANDS else COMMANDS)(prog_name="shapecheck")
