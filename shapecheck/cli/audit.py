"""``shapecheck audit TARGET | --preset NAME``: parameters against the formulas; missing, extra, dead, shared weights.

Exit 0 when everything is accounted for, 1 when a submodule differs from its
formula or a parameter is dead, 2 on a usage error (one line, no traceback).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from typing import Any, Optional

import torch
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from shapecheck.auditing import AuditResult, audit
from shapecheck.auditing.presets import preset
from shapecheck.auditing.result import Liveness
from shapecheck.auditing.render import finding_lines, markdown, rows, total_lines, values_text, verdict
from shapecheck.cli.common import EXIT_FINDINGS, EXIT_OK, require_at_least, require_choice, usage_error
from shapecheck.catalog import PRESETS
from shapecheck.errors import UsageError, first_line
from shapecheck.target import Construction, Target, build, load_target, map_arguments, parse_init

FORMATS = ("table", "json", "markdown")


def _construct(target: Target, construction: Construction, device: Optional[str]) -> torch.nn.Module:
    with torch.device(device) if device else contextlib.nullcontext():
        module = target.obj(**construction.arguments)
    if not isinstance(module, torch.nn.Module):
        raise UsageError(f"{target.spec}: factory {target.name} returned {type(module).__name__}, not an nn.Module")
    return module


def _build_target(spec: str, d_model: int, heads: int, init: dict[str, Any]) -> tuple[torch.nn.Module, Construction]:
    """Build on the meta device; a constructor that cannot run there is built on the CPU instead."""
    target = load_target(spec)
    construction = map_arguments(target, d_model=d_model, heads=heads, init=init)
    for device in ("meta", None):
        try:
            return _construct(target, construction, device), construction
        except UsageError:
            raise
        except Exception as error:  # noqa: BLE001 - the user's constructor raises anything
            failure = error
    raise UsageError(f"{spec}: the module fails to construct: {construction.describe()} raised {first_line(failure)}")


def _probe(spec: str, d_model: int, heads: int, init: dict[str, Any]) -> tuple[Optional[torch.nn.Module], str]:
    try:
        module, construction = build(load_target(spec), d_model=d_model, heads=heads, init=init)
    except UsageError as error:
        return None, f"not run: the small probe could not be built ({error})"
    return module, construction.describe()


def _from_target(spec: str, d_model: int, heads: int, init: dict[str, Any], probe_d_model: int, probe_heads: int, liveness: bool) -> AuditResult:
    model, construction = _build_target(spec, d_model, heads, init)
    probe, described = _probe(spec, probe_d_model, probe_heads, init) if liveness else (None, "not run (--no-liveness)")
    result = audit(model, probe=probe, name=f"{spec}: {construction.describe()}")
    return _with_probe_note(result, probe, described)


def _with_probe_note(result: AuditResult, probe: Optional[torch.nn.Module], described: str) -> AuditResult:
    if probe is None:
        return replace(result, liveness=Liveness(False, described))
    detail = result.liveness.detail.replace(f"a small {type(probe).__name__}", described, 1)
    return replace(result, liveness=replace(result.liveness, detail=detail))


def _from_preset(name: str, d_model: Optional[int], heads: Optional[int], liveness: bool) -> AuditResult:
    model, probe, label = preset(name, d_model, heads)
    result = audit(model, probe=probe if liveness else None, name=label)
    return result if liveness else _with_probe_note(result, None, "not run (--no-liveness)")


def render_table(result: AuditResult) -> None:
    console = Console(emoji=False)  # "model.py:M: ..." must not print as "model.pyⓂ ..."
    if not console.is_terminal:
        console = Console(width=150, emoji=False)  # piped or captured: wide enough for one row per line
    console.print(f"[bold]{escape(result.name)}[/bold]", highlight=False, soft_wrap=True)
    table = Table(show_lines=False)
    for name, justify in (("submodule", "left"), ("kind", "left"), ("formula", "left"), ("counted", "right"),
                          ("expected", "right"), ("differences", "left")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for row in rows(result):
        c = row.component
        diffs = "\n".join(f"[red]{escape(d.describe())}[/red]" for d in c.differences) or "[green]ok[/green]"
        formula = f"{c.formula}\n[dim]{escape(values_text(c))}[/dim]"
        label = escape(row.label) + (f"\n[dim]{escape(c.style)}[/dim]" if c.kind in ("attention", "feed_forward") else "")
        table.add_row(label, c.kind, formula, f"{c.counted:,}", f"{c.expected:,}", diffs)
    console.print(table)
    for line in finding_lines(result):
        console.print(escape(line), highlight=False, soft_wrap=True)
    for label, value in total_lines(result):
        console.print(f"{label:<55}{value:>16,}", highlight=False)
    style = "green" if result.clean else "bold red"
    console.print(f"[{style}]{escape(verdict(result))}[/]", highlight=False)


def audit_command(
    target: Optional[str] = typer.Argument(None, help="path/to/file.py:Name or package.module:Name (an nn.Module class or a factory)."),
    preset_name: Optional[str] = typer.Option(None, "--preset", help=f"A released model instead of TARGET: {', '.join(PRESETS)}."),
    d_model: Optional[int] = typer.Option(None, "--d-model", help="Model width passed to TARGET (default 512; a preset's own)."),
    heads: Optional[int] = typer.Option(None, "--heads", help="Attention heads passed to TARGET (default 8; a preset's own)."),
    init: Optional[str] = typer.Option(None, help="Constructor arguments the tool cannot map: 'name=value,...'."),
    output_format: str = typer.Option("table", "--format", help="table | json | markdown."),
    probe_d_model: int = typer.Option(16, "--probe-d-model", help="Width of the small instance the dead-parameter pass runs."),
    probe_heads: int = typer.Option(2, "--probe-heads", help="Heads of the small instance the dead-parameter pass runs."),
    liveness: bool = typer.Option(True, "--liveness/--no-liveness", help="Run the forward/backward pass that finds dead parameters."),
) -> None:
    """Count a model's parameters against the attention formulas: missing, extra, dead and shared weights.

    Parameters are counted on the meta device (no weights allocated); dead ones
    are found on a small instance. Exit 0 when everything is accounted for,
    1 on a formula mismatch or a dead parameter, 2 on a usage error.
    """
    require_choice("--format", output_format, FORMATS)
    if (target is None) == (preset_name is None):
        usage_error("give either TARGET (path/to/file.py:Name) or --preset NAME" + ("" if target is None else ", not both"))
    for name, value in (("--d-model", d_model), ("--heads", heads), ("--probe-d-model", probe_d_model), ("--probe-heads", probe_heads)):
        require_at_least(name, value, 1)
    if preset_name is not None and init:
        usage_error("--init applies to TARGET's constructor; a preset takes only --d-model and --heads")
    if preset_name is not None:
        result = _from_preset(preset_name, d_model, heads, liveness)
    else:
        result = _from_target(target, d_model or 512, heads or 8, parse_init(init), probe_d_model, probe_heads, liveness)  # type: ignore[arg-type]
    if output_format == "json":
        typer.echo(json.dumps(result.to_dict(), indent=2))
    elif output_format == "markdown":
        typer.echo(markdown(result))
    else:
        render_table(result)
    raise typer.Exit(EXIT_OK if result.clean else EXIT_FINDINGS)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_command)
