"""``shapecheck lint PATH...``: attention-aware static analysis; reads files, never imports or runs them.

Exit 0 when nothing at or above ``--fail-on`` (default: warning) is found, 1 when
something is, 2 on a usage error (one line, no traceback) or when a file does not parse
(it is still reported, as SC001, with the others' findings); ``--exit-zero`` makes the last two 0.
CI conventions follow ruff's names: ``--exclude``/``--extend-exclude``, ``--per-file-ignores``,
``--exit-zero``, ``-`` for stdin with ``--stdin-filename``, ``--statistics``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Optional

import typer

from shapecheck.cli import options
from shapecheck.cli.common import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, usage_error
from shapecheck.errors import ShapecheckError
from shapecheck.lint import output
from shapecheck.lint.api import lint_paths, lint_stream
from shapecheck.lint.config import LintConfig, check_codes, find_pyproject, load_config, parse_per_file_ignores
from shapecheck.lint.messages import SEVERITIES, FileNotParsed, Finding

UNPARSED = FileNotParsed.code


def _codes(values: Optional[list[str]], option: str) -> tuple[str, ...]:
    """Every value of a repeatable option, each of which may be comma-separated."""
    return check_codes(options.split_selection(values), option)


def _config(paths: list[str], config_file: Optional[str], select: Optional[list[str]],
            ignore: Optional[list[str]], fail_on: Optional[str], exclude: Optional[list[str]] = None,
            extend_exclude: Optional[list[str]] = None, per_file_ignores: Optional[list[str]] = None,
            extend_select: Optional[list[str]] = None) -> LintConfig:
    """pyproject's [tool.shapecheck], overridden (select, fail-on, exclude) or extended (extend-select, ignore,
    extend-exclude, per-file-ignores) by the command-line options."""
    if config_file is not None and not Path(config_file).exists():
        usage_error(f"--config: no such file: {config_file}")
    start = next((Path(p) for p in paths if p != "-"), Path.cwd())
    found = Path(config_file) if config_file else find_pyproject(start)
    base = load_config(found)
    chosen = _codes(select, "--select")
    return replace(
        base,
        select=chosen or base.select,
        extend_select=base.extend_select + _codes(extend_select, "--extend-select"),
        ignore=base.ignore + _codes(ignore, "--ignore"),
        fail_on=fail_on or base.fail_on,
        exclude=options.split_selection(exclude) or base.exclude,
        extend_exclude=base.extend_exclude + options.split_selection(extend_exclude),
        per_file_ignores=base.per_file_ignores + parse_per_file_ignores(
            options.split_selection(per_file_ignores), "--per-file-ignores"),
    )


def _lint(paths: list[str], config: LintConfig, jobs: int, stdin_filename: Optional[str]) -> tuple[int, list[Finding]]:
    """The files named and searched, and ``-`` read from stdin (shown as ``--stdin-filename``)."""
    files, findings = lint_paths([p for p in paths if p != "-"], config, jobs)
    if "-" in paths:
        findings = lint_stream(sys.stdin.buffer, stdin_filename or "-", config) + findings
        files += 1
    return files, findings


def _exit_code(config: LintConfig, findings: list[Finding], exit_zero: bool = False) -> int:
    if exit_zero:
        return EXIT_OK  # findings are reported, never fail the run (ruff's --exit-zero)
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
        extend_select: Optional[list[str]] = options.selection(
            "--extend-select", metavar="CODE",
            help="Report these codes too; an opt-in rule (--list-rules marks it) is reported only when named exactly."),
        ignore: Optional[list[str]] = options.selection("--ignore", metavar="CODE", help="Drop these code prefixes."),
        config_file: Optional[str] = options.text("--config", metavar="FILE",
                                                  help="pyproject.toml to read \\[tool.shapecheck] from (default: the nearest one)."),
        jobs: int = options.positive("--jobs", "-j", default=os.cpu_count() or 1,
                                     help="Lint files in N processes (default: the number of CPUs); same output, same order."),
        hints: bool = options.flag("--hints", help="Table format: print each finding's fix hint below it."),
        exclude: Optional[list[str]] = options.selection(
            "--exclude", metavar="PATTERN",
            help="Path patterns not searched in directories (replaces the defaults: .*, __pycache__, node_modules)."),
        extend_exclude: Optional[list[str]] = options.selection(
            "--extend-exclude", metavar="PATTERN", help="Path patterns not searched, in addition to the excluded ones."),
        per_file_ignores: Optional[list[str]] = options.selection(
            "--per-file-ignores", metavar="PATTERN:CODE", help="Drop code prefixes in matching files, e.g. 'tests/*:SC111'."),
        exit_zero: bool = options.flag("--exit-zero", help="Exit 0 even when something is found (findings still print)."),
        stdin_filename: Optional[str] = options.text(
            "--stdin-filename", metavar="PATH", help="The path to report for source read from stdin ('-')."),
        statistics: bool = options.flag("--statistics", help="Print how many findings each code has instead of the findings."),
        list_rules: bool = options.flag("--list-rules", help="Print every rule's code, severity, message and hint, then exit."),
    ) -> None:
        """Find attention bugs without running the code: softmax axis, scaling, head split/merge, masks, dropout."""
        if list_rules:
            typer.echo(output.rules_table())
            raise typer.Exit(EXIT_OK)
        if not paths:
            usage_error("give at least one PATH to lint (a .py file or a directory)")
        try:
            config = _config(paths, config_file, select, ignore, fail_on, exclude, extend_exclude, per_file_ignores,
                             extend_select)
            files, findings = _lint(paths, config, jobs, stdin_filename)
        except ShapecheckError as error:
            usage_error(str(error))
        if config.note:
            typer.echo(f"shapecheck: note: {config.note}", err=True)
        code = _exit_code(config, findings, exit_zero)
        table = (lambda: output.statistics(findings)) if statistics else (lambda: output.text(findings, hints))
        rendered = {"table": table, "json": lambda: output.as_json(files, findings, code),
                    "sarif": lambda: output.sarif(findings)}[fmt]()
        if rendered:
            typer.echo(rendered)
        raise typer.Exit(code)


__all__ = ["register"]
