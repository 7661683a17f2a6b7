"""``shapecheck lint PATH...``: attention-aware static analysis; reads files, never imports or runs them.

Exit 0 when nothing at or above ``--fail-on`` (default: warning) is found, 1 when
something is, 2 on a usage error (one line, no traceback) or when a file does not parse
(it is still reported, as SC001, with the others' findings).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from shapecheck.cli.common import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, usage_error
from shapecheck.errors import ShapecheckError
from shapecheck.lint import output
from shapecheck.lint.api import lint_paths
from shapecheck.lint.config import LintConfig, check_codes, check_severity, find_pyproject, load_config
from shapecheck.lint.messages import RULES, FileNotParsed

UNPARSED = FileNotParsed.code


def _config(paths: list[str], config_file: Optional[str], select: Optional[str], ignore: Optional[str],
            fail_on: Optional[str]) -> LintConfig:
    """pyproject's [tool.shapecheck], overridden by the command-line options."""
    if config_file is not None and not Path(config_file).is_file():
        usage_error(f"--config: no such file: {config_file}")
    found = Path(config_file) if config_file else find_pyproject(Path(paths[0]) if paths else Path.cwd())
    base = load_config(found)
    return LintConfig(
        select=check_codes(select.split(","), "--select") if select else base.select,
        ignore=base.ignore + (check_codes(ignore.split(","), "--ignore") if ignore else ()),
        fail_on=check_severity(fail_on, "--fail-on") if fail_on else base.fail_on,
        source=base.source, note=base.note,
    )


def _rules_table() -> str:
    return "\n".join(f"{r.code}  {r.severity:<7}  {r.name}: {r.hint}" for r in RULES)


def register(app: typer.Typer) -> None:
    @app.command("lint")
    def lint_command(
        paths: Optional[list[str]] = typer.Argument(None, help="Python files or directories (searched for *.py)"),
        fmt: str = typer.Option("text", "--format", help="text (path:line:col: CODE message), json or sarif"),
        fail_on: Optional[str] = typer.Option(None, "--fail-on", help="lowest severity that exits 1: error, warning (default) or info"),
        select: Optional[str] = typer.Option(None, "--select", help="report only these code prefixes, e.g. 'SC1,SC001'"),
        ignore: Optional[str] = typer.Option(None, "--ignore", help="drop these code prefixes, e.g. 'SC102'"),
        config_file: Optional[str] = typer.Option(None, "--config", help="pyproject.toml to read [tool.shapecheck] from (default: the nearest one)"),
        hints: bool = typer.Option(False, "--hints", help="text format: print each finding's fix hint below it"),
        list_rules: bool = typer.Option(False, "--list-rules", help="print every rule's code, severity and hint, then exit"),
    ) -> None:
        """Find attention bugs without running the code: softmax axis, scaling, head split/merge, masks, dropout."""
        if list_rules:
            typer.echo(_rules_table())
            raise typer.Exit(EXIT_OK)
        if fmt not in output.FORMATS:
            usage_error(f"unknown --format {fmt!r} (choices: {', '.join(output.FORMATS)})")
        if not paths:
            usage_error("give at least one PATH to lint (a .py file or a directory)")
        try:
            config = _config(paths, config_file, select, ignore, fail_on)
            files, findings = lint_paths(paths, config)
        except ShapecheckError as error:
            usage_error(str(error))
        if config.note:
            typer.echo(f"shapecheck: note: {config.note}", err=True)
        rendered = {"text": lambda: output.text(findings, hints), "json": lambda: output.as_json(files, findings),
                    "sarif": lambda: output.sarif(findings)}[fmt]()
        if rendered:
            typer.echo(rendered)
        if any(f.code == UNPARSED for f in findings):
            raise typer.Exit(EXIT_USAGE)  # a file that does not parse is bad input, reported above as SC001
        failing = any(config.fails(f.severity) for f in findings)
        raise typer.Exit(EXIT_FINDINGS if failing else EXIT_OK)


__all__ = ["register"]
