"""``shapecheck verify TARGET``: property-test an attention module and report the minimal failing configuration."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from shapecheck.cli.common import require_at_least, require_choice, usage_error
from shapecheck.target import load_target, parse_init
from shapecheck.testing.properties import PROPERTY_NAMES
from shapecheck.testing.runner import VerifyReport, verify
from shapecheck.testing.subject import VerifyOptions

LAYOUTS = ("batch-first", "seq-first")
MASKS = ("auto", "keep", "ignore", "additive", "none")
FORMATS = ("table", "json")
MASKED_ROWS = ("finite", "nan", "zeros", "uniform")
_STYLE = {"passed": "green", "failed": "bold red", "skipped": "dim", "warning": "yellow"}


def _options(layout: Optional[str], mask: str, causal: bool, max_examples: int, seed: int, strict: bool,
             init: Optional[str], masked_rows: str, only: Optional[list[str]], fail_fast: bool, max_seq: int) -> VerifyOptions:
    require_choice("--layout", layout, LAYOUTS)
    require_choice("--mask", mask, MASKS)
    require_choice("--masked-rows", masked_rows, MASKED_ROWS)
    for name in only or ():
        require_choice("--property", name, PROPERTY_NAMES)
    require_at_least("--max-examples", max_examples, 1)
    require_at_least("--max-seq", max_seq, 2)
    return VerifyOptions(
        layout=layout, mask=mask, causal=causal, max_examples=max_examples, seed=seed, strict=strict,  # type: ignore[arg-type]
        init=parse_init(init), masked_rows=masked_rows, properties=tuple(only) if only else None,  # type: ignore[arg-type]
        fail_fast=fail_fast, max_seq=max_seq,
    )


def _run_with_progress(target: Any, options: VerifyOptions) -> VerifyReport:
    console = Console(file=sys.stderr)
    columns = (TextColumn("{task.description:<20}"), BarColumn(), TextColumn("{task.completed}/{task.total} examples"))
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("verify", total=None)

        def advance(name: str, done: int, total: int) -> None:
            progress.update(task, description=name, completed=done, total=total)

        return verify(target, options, progress=advance)


def _details(result: Any) -> str:
    if result.status in ("passed",):
        return result.message
    lines = [result.message]
    if result.counterexample:
        lines.append("minimal: " + ", ".join(f"{k}={v}" for k, v in result.counterexample.items()))
    if result.hint:
        lines.append("hint: " + result.hint)
    return "\n".join(lines)


def render_table(report: VerifyReport) -> None:
    """The mapping and calling convention chosen, then one row per property."""
    console = Console()
    console.print(f"[bold]{escape(report.target)}[/bold]  built as {escape(report.construction)}", highlight=False, soft_wrap=True)
    for note in report.notes:
        console.print(f"  [dim]{escape(note)}[/dim]", highlight=False, soft_wrap=True)
    table = Table(show_lines=True)
    table.add_column("property")
    table.add_column("status")
    table.add_column("details", overflow="fold")
    for result in report.results:
        table.add_row(result.name, f"[{_STYLE[result.status]}]{result.status}[/]", escape(_details(result)))
    console.print(table)
    counts = {s: sum(r.status == s for r in report.results) for s in _STYLE}
    console.print(", ".join(f"{n} {s}" for s, n in counts.items()), highlight=False)
    if report.interrupted:
        console.print("interrupted: the properties above finished; the rest did not run", highlight=False)


def verify_command(
    target: str = typer.Argument(..., help="path/to/file.py:Name or package.module:Name (an nn.Module class or a factory)."),
    layout: Optional[str] = typer.Option(None, help="batch-first | seq-first (default: the module's batch_first, else its annotations, else batch-first)."),
    mask: str = typer.Option("auto", help="Mask convention: auto | keep (True/1 = attend) | ignore (True = pad) | additive | none."),
    causal: bool = typer.Option(False, "--causal", help="The module is causal by construction: assert it."),
    max_examples: int = typer.Option(50, "--max-examples", help="Hypothesis examples per property."),
    seed: int = typer.Option(0, help="Random seed; the same seed gives the same run."),
    strict: bool = typer.Option(False, "--strict", help="Fully masked rows fail instead of warning."),
    output_format: str = typer.Option("table", "--format", help="table | json."),
    init: Optional[str] = typer.Option(None, help="Constructor arguments the tool cannot map: 'name=value,...'."),
    masked_rows: str = typer.Option("finite", "--masked-rows", help="Policy for rows with every key masked: finite | nan | zeros | uniform."),
    only: Optional[list[str]] = typer.Option(None, "--property", help=f"Run only these properties ({', '.join(PROPERTY_NAMES)})."),
    fail_fast: bool = typer.Option(False, "--fail-fast", help="Stop at the first failing property."),
    max_seq: int = typer.Option(5, "--max-seq", help="Longest query/key length drawn."),
    scale: Optional[float] = typer.Option(None, "--scale", help="The softmax scale the module uses by design (e.g. 1 for T5, GPT-Neo); default: its declared scale, else 1/√d_head."),
    d_head_multiple: Optional[int] = typer.Option(None, "--d-head-multiple", help="Head sizes the constructor accepts are multiples of this (default: probed)."),
) -> None:
    """Property-test an attention module across head counts, widths, batch sizes and sequence lengths.

    Exit 0 when nothing failed (warnings allowed), 1 when a property failed, 2 on a usage or import error.
    """
    require_choice("--format", output_format, FORMATS)
    options = _options(layout, mask, causal, max_examples, seed, strict, init, masked_rows, only, fail_fast, max_seq)
    require_at_least("--d-head-multiple", d_head_multiple, 1)
    if scale is not None and scale <= 0:
        usage_error(f"--scale {scale:g} must be positive")
    options = replace(options, scale=scale, d_head_multiple=d_head_multiple)
    loaded = load_target(target)
    try:
        report = verify(loaded, options) if output_format == "json" else _run_with_progress(loaded, options)
    except KeyboardInterrupt:
        typer.echo("shapecheck: interrupted before any property finished", err=True)
        raise typer.Exit(130) from None
    if output_format == "json":
        typer.echo(json.dumps(report.as_dict(), indent=2, default=str))
    else:
        render_table(report)
    raise typer.Exit(report.exit_code)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify_command)
