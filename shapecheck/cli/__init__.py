"""The ``shapecheck`` command line: a thin layer over library functions that return data.

Each subcommand lives in its own module here and exposes ``register(app)``.
Exit codes: 0 success, 1 findings, 2 bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import importlib

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


app = typer.Typer(
    cls=_Group,
    name="shapecheck",
    help="Static analysis and shape verification for attention code.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

for _name in COMMANDS:
    importlib.import_module(f"shapecheck.cli.{_name}").register(app)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="shapecheck")
