"""``shapecheck verify TARGET``: property-test an attention module and report the minimal failing configuration."""

from __future__ import annotations

import sys
from typing import Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from shapecheck.cli import options
from shapecheck.render.verify import RENDERERS, nothing_checked
from shapecheck.target import load_target, user_code
from shapecheck.testing.properties import PROPERTY_NAMES
from shapecheck.testing.runner import VerifyReport, verify
from shapecheck.testing.subject import VerifyOptions

LAYOUTS = ("batch-first", "seq-first")
MASKS = ("auto", "keep", "ignore", "additive", "keep_float", "none")
MASKED_ROWS = ("finite", "nan", "zeros", "uniform")


def _run_with_progress(target: Any, options: VerifyOptions) -> VerifyReport:
    console = Console(file=sys.stderr)
    columns = (TextColumn("{task.description:<20}"), BarColumn(), TextColumn("{task.completed}/{task.total} examples"))
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("verify", total=None)

        def advance(name: str, done: int, total: int) -> None:
            progress.update(task, description=name, completed=done, total=total)

        return verify(target, options, progress=advance)


def verify_command(
    target: str = options.target(),
    layout: Optional[str] = options.choice("--layout", choices=LAYOUTS, help="Tensor layout (default: the module's batch_first, else its annotations, else batch-first)."),
    mask: str = options.choice("--mask", choices=MASKS, default="auto", help="Mask convention (auto: probed; keep: True/1 = attend; ignore: True = pad; additive; keep_float; none)."),
    causal: bool = options.flag("--causal", help="The module is causal by construction: assert it."),
    max_examples: int = options.positive("--max-examples", default=50, help="Hypothesis examples per property."),
    seed: int = options.seed(),
    strict: bool = options.flag("--strict", help="Fully masked rows fail instead of warning; a padding mask keeps its name's contract even where the module behaves otherwise."),
    output_format: str = options.output_format(),
    init: Optional[dict[str, Any]] = options.init(),
    masked_rows: str = options.choice("--masked-rows", choices=MASKED_ROWS, default="finite", help="Policy for rows with every key masked."),
    only: Optional[list[str]] = options.selection("--property", choices=PROPERTY_NAMES, help="Run only these properties (repeatable, comma-separated)."),
    fail_fast: bool = options.flag("--fail-fast", help="Stop at the first failing property."),
    max_seq: int = options.positive("--max-seq-len", default=5, minimum=2, help="Longest query/key length drawn."),
    scale: Optional[float] = options.number("--scale", help="The softmax scale the module uses by design (1 for GPT-Neo); default: its declared scale, else 1/√d_head."),
    d_head_multiple: Optional[int] = options.positive("--d-head-multiple", help="Head sizes the constructor accepts are multiples of this (default: probed)."),
    timeout: Optional[float] = options.timeout(),
) -> None:
    """Property-test an attention module (or a whole model) across head counts, widths, batch sizes and sequence lengths.

    Exit 0 when the properties that ran passed (warnings allowed), 1 when a property failed, 2 on a usage error, a module that cannot run,
    or a run in which every selected property was skipped (nothing checked), 130 on Ctrl-C.
    """
    selected = options.split_selection(only)
    run = VerifyOptions(
        layout=layout, mask=mask, causal=causal, max_examples=max_examples, seed=seed, strict=strict,  # type: ignore[arg-type]
        init=dict(init or {}), masked_rows=masked_rows, properties=selected or None, fail_fast=fail_fast,  # type: ignore[arg-type]
        max_seq=max_seq, scale=scale, d_head_multiple=d_head_multiple,
    )
    try:
        with user_code(timeout) as guard:
            loaded = load_target(target)
            report = verify(loaded, run) if output_format != "table" else _run_with_progress(loaded, run)
    except KeyboardInterrupt:
        typer.echo("shapecheck: interrupted before any property finished", err=True)
        raise typer.Exit(130) from None
    guard.require_not_interrupted_by_module(report.interrupted)
    typer.echo(RENDERERS[output_format](report), nl=False)
    if not report.checked and not report.interrupted:
        typer.echo(f"shapecheck: {nothing_checked(report)}", err=True)
    raise typer.Exit(report.exit_code)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify_command)
