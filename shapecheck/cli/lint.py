"""``shapecheck lint PATH...``: attention-aware static analysis; reads files, never imports or runs them.

Exit 0 when nothing at or above ``--fail-on`` (default: warning) is found, 1 when
something is, 2 on a usage error (one line, no traceback) or when a file does not parse
(it is still reported, as SC001, with the others' findings).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from shapecheck.cli import options
from shapecheck.cli.common import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, usage_error
from shapecheck.errors import ShapecheckError
from shapecheck.lint import output
from shapecheck.lint.api import lint_paths
from shapecheck.lint.config import LintConfig, check_codes, find_pyproject, load_config
from shapecheck.lint.messages import SEVERITIES, FileNotParsed, Finding

UNPARSED = FileNotParsed.code


def _codes(values: Optional[list[str]], option: str) -> tuple[str, ...]:
    """Every value of a repeatable option, each of which may be comma-separated."""
    return check_codes(options.split_selection(values), option)


def _config(paths: list[str], config_file: Optional[str], select: Optional[list[str]],
            ignore: Optional[list[str]], fail_on: Optional[str]) -> LintConfig:
    """pyproject's [tool.shapecheck], overridden by the command-line options."""
    if config_file is not None and not Path(config_file).is_file():
        usage_error(f"--config: no such file: {config_file}")
    found = Path(config_file) if config_file else find_pyproject(Path(paths[0]) if paths else Path.cwd())
    base = load_config(found)
    chosen = _codes(select, "--select")
    return LintConfig(
        select=chosen or base.select,
        ignore=base.ignore + _codes(ignore, "--ignore"),
        fail_on=fail_on or base.fail_on,
        source=base.source, note=base.note,
    )


def _exit_code(config: LintConfig, findings: list[Finding]) -> int:
    if any(f.code == UNPARSED for f in findings):
        return EXIT_USAGE  # a file that does not parse is bad input, reported as SC001
    return EXIT_FINDINGS if any(config.fails(f.severity) for f in findings) else EXIT_OK


def register(app: typer.Typer) -> None:
    @app.command("lint")
    def lint_command(
        paths: Optional[list[str]] = typer.Argument(None, help="Python files or directories (searched for *.py)"),
        fmt: str = options.output_format(output.FORMATS),
        fail_on: Optional[str] = options.choice("--fail-on", choices=tuple(reversed(SEVERITIES)),
                                                help="Lowest severity that exits 1 (default: warning)."),
        select: Optional[list[str]] = options.selection("--select", metavar="CODE",
                                                        help="Report only these code prefixes, e.g. 'SC1,SC001'."),
        ignore: Optional[list[str]] = options.selection("--ignore", metavar="CODE", help="Drop these code prefixes."),
        config_file: Optional[str] = options.text("--config", metavar="FILE",
                                                  help="pyproject.toml to read \\[tool.shapecheck] from (default: the nearest one)."),
        jobs: int = options.positive("--jobs", "-j", default=os.cpu_count() or 1,
                                     help="Lint files in N processes (default: the number of CPUs); same output, same order."),
        hints: bool = options.flag("--hints", help="Table format: print each finding's fix hint below it."),
        list_rules: bool = options.flag("--list-rules", help="Print every rule's code, severity, message and hint, then exit."),
    ) -> None:
        """Find attention bugs without running the code: softmax axis, scaling, head split/merge, masks, dropout."""
        if list_rules:
            typer.echo(output.rules_table())
            raise typer.Exit(EXIT_OK)
        if not paths:
            usage_error("give at least one PATH to lint (a .py file or a directory)")
        try:
            config = _config(paths, config_file, select, ignore, fail_on)
            files, findings = lint_paths(paths, config, jobs)
        except ShapecheckError as error:
            usage_error(str(error))
        if config.note:
            typer.echo(f"shapecheck: note: {config.note}", err=True)
        code = _exit_code(config, findings)
        rendered = {"table": lambda: output.text(findings, hints), "json": lambda: output.as_json(files, findings, code),
                    "sarif": lambda: output.sarif(findings)}[fmt]()
        if rendered:
            typer.echo(rendered)
        raise typer.Exit(code)


__all__ = ["register"]
