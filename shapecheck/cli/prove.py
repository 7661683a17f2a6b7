"""``shapecheck prove TARGET | --preset NAME``: output shapes and constraints for every batch and sequence size.

Exit codes: 0 the shapes check out (or were proved and a line on stderr names what
was not checked), 1 an annotation disagrees with the symbolic shapes or a sampled
size fails, 2 bad input, 130 Ctrl-C (what finished is printed).
"""

from __future__ import annotations

from typing import Any, Optional

import typer

from shapecheck.catalog import PRESETS
from shapecheck.cli import options
from shapecheck.errors import UsageError
from shapecheck.prove.targets import prove_preset, prove_target
from shapecheck.render.layout import StatusLine
from shapecheck.render.prove import RENDERERS, exit_code
from shapecheck.target import user_code

FORMATS = options.FORMATS  # the renderers cover every one


def _caps(caps: Optional[dict[str, int]]) -> dict[str, int]:
    """``seq=N`` caps the query and key lengths too."""
    caps = dict(caps or {})
    return {"seq_q": caps["seq"], "seq_k": caps["seq"], **caps} if "seq" in caps else caps


def register(app: typer.Typer) -> None:
    @app.command("prove")
    def prove_command(
        target: Optional[str] = typer.Argument(None, help="path/to/file.py:Name or package.module:Name (a module class or factory)."),
        preset: Optional[str] = options.preset(tuple(PRESETS)),
        d_model: Optional[int] = options.d_model(),
        heads: Optional[int] = options.heads(),
        init: Optional[dict[str, Any]] = options.init(),
        cross: bool = options.flag("--cross", help="Also pass keys and values (two sequence axes, seq_q and seq_k)."),
        inputs: Optional[list[str]] = options.selection("--inputs", help="forward arguments to pass, e.g. 'query,key,value'."),
        size: Optional[dict[str, int]] = options.sizes("--size", help="Sizes of other axes, e.g. 'd_in=32'."),
        samples: int = options.positive("--samples", default=3, minimum=0,
                                        help="In-range sizes at which to run the exported program (0: none)."),
        max_size: Optional[dict[str, int]] = options.sizes("--max-size", help="Largest sampled sizes, e.g. 'seq=512,batch=2'."),
        seed: int = options.seed(),
        output_format: str = options.output_format(FORMATS),
        timeout: Optional[float] = options.timeout(),
    ) -> None:
        """Export TARGET with dynamic batch and sequence sizes and report its output shape and constraints.

        Bounds from position tables and causal masks are confirmed by running at N and N + 1;
        the program is sampled at 1 and at the top of every range.
        """
        if target is None and preset is None:
            raise UsageError(f"give a TARGET (path/to/file.py:Name or package.module:Name) or --preset ({', '.join(PRESETS)})")
        names = list(options.split_selection(inputs)) or None
        run = dict(inputs=names, cross=cross, sizes=size, samples=samples, caps=_caps(max_size), seed=seed)
        with user_code(timeout) as guard, StatusLine() as status:
            if target is None:
                result = prove_preset(preset or "", d_model=d_model, heads=heads, progress=status, **run)
            else:
                result = prove_target(target, d_model=d_model, heads=heads, init=init, progress=status, **run)
        guard.require_not_interrupted_by_module(result.interrupted)
        typer.echo(RENDERERS[output_format](result), nl=False)
        if result.ok and not result.checked and samples > 0:
            typer.echo(f"shapecheck: prove: not checked: {'; '.join(result.unchecked) or 'no size was run'}", err=True)
        raise typer.Exit(exit_code(result))
