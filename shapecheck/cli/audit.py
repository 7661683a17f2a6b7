"""``shapecheck audit TARGET | --preset NAME``: parameters against the formulas; missing, extra, dead, shared weights.

Exit 0 when every check ran and passed, or when the counts are clean and the
dead-parameter pass could not run (a line on stderr says so); 1 when a submodule
differs from its formula or a parameter is dead; 2 on a usage error (one line);
130 on Ctrl-C (what finished is printed).
"""

from __future__ import annotations

from typing import Any, Optional

import typer

from shapecheck.auditing.targets import audit_preset, audit_target
from shapecheck.catalog import PRESETS
from shapecheck.cli import options
from shapecheck.errors import UsageError
from shapecheck.render.audit import RENDERERS
from shapecheck.render.layout import StatusLine
from shapecheck.target import user_code

FORMATS = options.FORMATS  # the renderers cover every one


def audit_command(
    target: Optional[str] = typer.Argument(None, help="path/to/file.py:Name or package.module:Name (an nn.Module class or a factory)."),
    preset_name: Optional[str] = options.preset(tuple(PRESETS)),
    d_model: Optional[int] = options.d_model(),
    heads: Optional[int] = options.heads(),
    init: Optional[dict[str, Any]] = options.init(),
    output_format: str = options.output_format(FORMATS),
    probe_d_model: int = options.positive("--probe-d-model", default=16, help="Width of the small probe the dead-parameter pass runs."),
    probe_heads: int = options.positive("--probe-heads", default=2, help="Heads of the small probe the dead-parameter pass runs."),
    liveness: bool = options.flag("--liveness/--no-liveness", default=True,
                                  help="Run the forward/backward pass on a small probe that finds dead parameters."),
    timeout: Optional[float] = options.timeout(),
) -> None:
    """Count a model's parameters against the attention formulas: missing, extra, dead and shared weights.

    TARGET is built with its constructor's own defaults (--d-model and --heads replace them,
    and the replaced default is shown) and counted on the meta device; dead parameters are
    found on a small probe of the same class. Exit 0 clean, 1 on findings, 2 on bad input.
    """
    if (target is None) == (preset_name is None):
        raise UsageError("give either TARGET (path/to/file.py:Name) or --preset NAME" + ("" if target is None else ", not both"))
    if preset_name is not None and init:
        raise UsageError("--init applies to TARGET's constructor; a preset takes only --d-model and --heads")
    with user_code(timeout) as guard, StatusLine() as status:
        if preset_name is not None:
            result = audit_preset(preset_name, d_model=d_model, heads=heads, liveness=liveness, progress=status)
        else:
            result = audit_target(target or "", d_model=d_model, heads=heads, init=init, liveness=liveness, progress=status,
                                  probe_sizes={"d_model": probe_d_model, "heads": probe_heads})
    guard.require_not_interrupted_by_module(result.interrupted)
    typer.echo(RENDERERS[output_format](result), nl=False)
    if result.clean is None:
        typer.echo(f"shapecheck: audit: liveness not checked: {result.liveness.detail.removeprefix('not run: ')}", err=True)
    raise typer.Exit(result.exit_code)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit_command)
