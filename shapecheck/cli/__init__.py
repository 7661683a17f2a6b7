"""The ``shapecheck`` command line: a thin layer over library functions that return data.

Each subcommand lives in its own module here and exposes ``register(app)``.
Exit codes: 0 success, 1 findings, 2 bad input (one line on stderr, no traceback).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import signal
import sys
from collections.abc import Callable

import typer
from typer import exceptions as typer_exceptions
from typer._click import exceptions as click_exceptions
from typer.core import TyperGroup

from shapecheck import __version__
from shapecheck.cli.common import private_temporary_files, usage_error
from shapecheck.errors import ShapecheckError

# Subcommand modules, in the order ``shapecheck --help`` lists them.
COMMANDS: tuple[str, ...] = ("report", "prove", "verify", "audit", "lint")


class _Group(TyperGroup):
    """One line and exit 2 for every usage error; exit 130 on Ctrl-C.

    A ``ShapecheckError`` a command lets escape, a bad option value (the parsers in
    ``options``) and click's own usage errors (unknown option, missing argument) are
    all printed as ``shapecheck: error: <what is wrong>``, never as a box or a traceback.
    """

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except ShapecheckError as error:
            usage_error(str(error))

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # type: ignore[no-untyped-def]
        try:
            code = super().main(args=args, prog_name=prog_name, complete_var=complete_var, standalone_mode=False, **extra)
        except click_exceptions.NoArgsIsHelpError as error:
            typer.echo(error.ctx.get_help() if error.ctx else str(error))
            code = 0
        except click_exceptions.ClickException as error:
            typer.echo(f"shapecheck: error: {_one_line(error)}", err=True)
            code = 2
        except typer_exceptions.Abort:
            code = 130
        sys.exit(code if isinstance(code, int) else 0)

    def get_help_option(self, ctx):  # type: ignore[no-untyped-def]
        return _as_flag(super().get_help_option(ctx))

    def get_command(self, ctx, name):  # type: ignore[no-untyped-def]
        command = super().get_command(ctx, name)
        if command is not None:
            _as_flag(command.get_help_option(ctx))
            for param in command.params:
                if getattr(param, "param_type_name", "") == "argument":
                    param.display_type_rich = _no_type  # the metavar (TARGET, PATH...) says what it takes
        return command


def _as_flag(option):  # type: ignore[no-untyped-def]
    """``-h/--help`` shown as a flag (no value type) in every command's help."""
    if option is not None:
        option.metavar = ""
    return option


def _no_type(ctx: object) -> None:
    return None


def _one_line(error: click_exceptions.ClickException) -> str:
    """A click error as one line: ``--heads must be ...``, ``no such option: --foo (see 'shapecheck report -h')``."""
    message = error.format_message().strip().splitlines()[0] if error.format_message().strip() else type(error).__name__
    missing = isinstance(error, click_exceptions.MissingParameter)
    if isinstance(error, click_exceptions.BadParameter) and error.param is not None and not missing:
        names = getattr(error.param, "opts", None) or [error.param.name or "value"]
        option = max(names, key=len) if getattr(error.param, "param_type_name", "") == "option" else (error.param.name or "").upper()
        return f"{option} {error.message}"
    ctx = getattr(error, "ctx", None)
    where = f" (see '{ctx.command_path} -h')" if ctx is not None else ""
    return message[0].lower() + message[1:].rstrip(".") + where


def _version(value: bool) -> None:
    if value:
        typer.echo(f"shapecheck {__version__}")
        raise typer.Exit(0)


def build_app(commands: tuple[str, ...] = COMMANDS) -> typer.Typer:
    """The CLI with the given subcommands registered (their modules are imported here)."""
    cli = typer.Typer(
        cls=_Group,
        name="shapecheck",
        help="Static analysis and shape verification for attention code.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @cli.callback()
    def _group(
        version: bool = typer.Option(False, "--version", help="Print the version and exit.", metavar="",
                                     callback=_version, is_eager=True),
    ) -> None:
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
    """Console-script entry point: imports only the subcommand asked for, so ``lint`` starts fast.

    ``report`` is a short process that counts on meta and prints: it runs with the cyclic garbage
    collector off (its full passes over torch's, sympy's and transformers' import-time objects cost
    0.3-0.9 s and free almost nothing; peak RSS is the same) and ends without tearing the interpreter
    down (another 0.3 s), once its output is flushed and the atexit handlers have run.
    """
    asked = sys.argv[1] if len(sys.argv) > 1 else None
    if asked in USER_CODE_COMMANDS:
        remove_temporary = private_temporary_files()
        if not _supervise(remove_temporary):
            atexit.register(remove_temporary)
    app = build_app((asked,) if asked in COMMANDS else COMMANDS)
    if asked != "report":
        try:
            app(prog_name="shapecheck")
        except SystemExit as done:
            _reported(done.code)
            raise
        return
    gc.disable()
    try:
        app(prog_name="shapecheck")
    except SystemExit as done:
        _exit_now(done.code)


# Commands that import, build or run the user's module (``lint`` only reads files).
USER_CODE_COMMANDS: tuple[str, ...] = ("report", "prove", "verify", "audit")
_REPORT_PIPE: list[int] = []  # in the supervised child: the pipe its exit status is announced on


def _supervise(cleanup: Callable[[], None]) -> bool:
    """Run the command in a forked child and wait: ``os._exit`` in the user's code ends the child, not the verdict.

    The child announces its exit status on a pipe just before it exits (``_reported``). A child that ends
    without announcing it was ended by the module it ran (``os._exit``, a signal): the parent says so and
    exits 2. Ctrl-C reaches the child, which reports what finished and exits 130; the parent waits for it.
    The parent runs ``cleanup`` once the child has ended, however it ended.
    Returns True in the child; the parent never returns. Without ``os.fork`` (Windows): False, nothing is supervised.
    """
    if not hasattr(os, "fork"):
        return False
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        _REPORT_PIPE.append(write_end)
        return True
    os.close(write_end)
    signal.signal(signal.SIGINT, lambda sig, frame: None if _terminal_sent_it() else os.kill(child, sig))
    forwarded: list[int] = []

    def forward(number: int, frame: object) -> None:
        forwarded.append(number)
        os.kill(child, number)

    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, forward)
    status = os.waitpid(child, 0)[1]
    os.set_blocking(read_end, False)  # a process the module forked may hold the write end open
    try:
        announced = os.read(read_end, 16)
    except BlockingIOError:
        announced = b""
    cleanup()
    os._exit(_verdict(status, announced, tuple(forwarded)))


def _terminal_sent_it() -> bool:
    """Whether a SIGINT came from the terminal's Ctrl-C, which the child (in the same foreground group) got too."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False


def _verdict(status: int, announced: bytes, sent: tuple[int, ...] = ()) -> int:
    """The supervised child's exit code, or 2 with one line when the module ended the child itself.
    ``sent``: signals the parent received and passed on (a stop asked from outside: 128 + the signal)."""
    code = os.waitstatus_to_exitcode(status)
    if announced.strip().isdigit():  # a report was made; its own exit status stands
        return code
    if code == -signal.SIGINT:
        return 130
    if code < 0 and -code in sent:
        typer.echo(f"shapecheck: error: stopped by {signal.Signals(-code).name} before a report was made", err=True)
        return 128 - code
    if code < 0:
        line = (f"the run was killed by signal {signal.Signals(-code).name} before a report was made "
                "(by the module, or by the system, e.g. out of memory); nothing was checked")
    else:
        line = f"the module ended the process (os._exit({code})) before a report was made; nothing was checked"
    typer.echo(f"shapecheck: error: {line}", err=True)
    return 2


def _reported(code: object) -> None:
    """In the supervised child: announce the exit status ``code`` to the parent (a report was made)."""
    if not _REPORT_PIPE:
        return
    number = code if isinstance(code, int) else 0 if code is None else 1
    with contextlib.suppress(OSError):
        os.write(_REPORT_PIPE[0], str(number).encode())


def _exit_now(code: object) -> None:
    """``sys.exit(code)``, less the interpreter's teardown: flush, run the atexit handlers, ``os._exit``."""
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # the reader went away (a closed pipe): as Python reports it at exit
        code = 120
    atexit._run_exitfuncs()
    _reported(code)
    os._exit(code or 0)
