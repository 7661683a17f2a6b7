"""``shapecheck prove TARGET``: output shapes and constraints for every batch and sequence size.

Exit codes: 0 the shapes check out, 1 an annotation disagrees with the symbolic
shapes or a sampled size fails, 2 bad input.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from torch import nn

from shapecheck.cli.common import EXIT_FINDINGS, EXIT_OK, usage_error
from shapecheck.catalog import PRESETS
from shapecheck.errors import UsageError
from shapecheck.prove import ProofResult, prove_module
from shapecheck.target import build, factory_for, load_target, parse_init

FORMATS = ("table", "json")


def _reference(name: str) -> tuple[dict, Callable[[], nn.Module]]:
    """(d_model and heads, a builder) of the catalogue preset ``name``."""
    from shapecheck.catalog import get_kind, get_preset, preset_sizes

    sizes = preset_sizes(name)
    build = get_kind(get_preset(name).kind).build
    return {"d_model": sizes.d_model, "heads": sizes.heads}, lambda: build(sizes)


def parse_sizes(text: Optional[str], option: str) -> dict[str, int]:
    """``'seq=128,batch=2'`` -> ``{'seq': 128, 'batch': 2}`` (positive integers)."""
    sizes: dict[str, int] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, _, value = item.partition("=")
        if not name.strip().isidentifier() or not value.strip().isdigit() or int(value) < 1:
            raise UsageError(f"{option} item {item.strip()!r} is not axis=N with N a positive integer (e.g. {option} seq=128)")
        sizes[name.strip()] = int(value)
    return sizes


def _integer(option: str, text: Optional[str], minimum: int) -> Optional[int]:
    """An integer option at least ``minimum`` (None when not given)."""
    if text is None:
        return None
    if not text.strip().isdigit() or int(text) < minimum:
        raise UsageError(f"{option} must be an integer >= {minimum}, got {text!r}")
    return int(text)


def _caps(text: Optional[str]) -> dict[str, int]:
    caps = parse_sizes(text, "--max-size")
    if "seq" in caps:
        caps = {"seq_q": caps["seq"], "seq_k": caps["seq"], **caps}
    return caps


def _module(
    target: Optional[str], preset: Optional[str], d_model: Optional[int], heads: Optional[int], init: Optional[str]
) -> tuple[nn.Module, str, dict, Optional[Callable]]:
    """The module to prove, its label, the sizes it was built with, and a (d_model, heads) rebuilder."""
    if target is None and preset is None:
        raise UsageError(f"give a TARGET (path/to/file.py:Name or package.module:Name) or --preset ({', '.join(PRESETS)})")
    sizes, model = _reference(preset) if preset else ({"d_model": 512, "heads": 8}, None)
    d_model, heads = d_model or sizes["d_model"], heads or sizes["heads"]
    if target is None and model is not None:
        if d_model != sizes["d_model"] or heads != sizes["heads"] or init:
            raise UsageError(f"--preset {preset} alone fixes its sizes; give a TARGET to build other sizes")
        return model(), preset or "", {"d_model": d_model, "heads": heads}, None
    loaded, values = load_target(target or ""), parse_init(init)
    module, _ = build(loaded, d_model=d_model, heads=heads, init=values)
    return module, loaded.spec, {"d_model": d_model, "heads": heads}, factory_for(loaded, init=values)


def render(result: ProofResult, console: Console) -> None:
    """The proof as a table: shapes, constraints, samples and problems."""
    console.print(f"prove {escape(result.target)}", highlight=False)
    table = Table(show_header=True)
    table.add_column("")
    table.add_column("shape for every size")
    for name, shape in result.inputs.items():
        table.add_row(escape(f"input {name}"), escape(_shape(shape)))
    for name, shape in result.outputs.items():
        table.add_row(escape(name), escape(_shape(shape)))
    console.print(table)
    console.print("constraints: " + escape("; ".join(result.constraints) or "none"), highlight=False)
    passed = sum(s.problem is None for s in result.samples)
    tried = "; ".join(" ".join(f"{k}={v}" for k, v in s.sizes.items()) for s in result.samples)
    ran = f"{passed}/{len(result.samples)} checked out ({tried})" if result.samples else "none run"
    console.print(f"samples: {ran}", highlight=False)
    for problem in result.problems:
        console.print(f"[bold red]problem[/] ({problem.kind}): {escape(problem.message)}", highlight=False)
    if result.ok:
        console.print(f"shapes check out (export {result.export_seconds:.2f} s, total {result.seconds:.2f} s)", highlight=False)


def _shape(shape: list) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ")"


def register(app: typer.Typer) -> None:
    @app.command("prove")
    def prove_command(
        target: Optional[str] = typer.Argument(None, help="path/to/file.py:Name or package.module:Name (a module class or factory)"),
        preset: Optional[str] = typer.Option(None, "--preset", help=f"a reference model, or its sizes for TARGET: {', '.join(PRESETS)}"),
        d_model: Optional[str] = typer.Option(None, "--d-model", help="model width (default 512, or the preset's)"),
        heads: Optional[str] = typer.Option(None, "--heads", help="attention heads (default 8, or the preset's)"),
        init: Optional[str] = typer.Option(None, "--init", help="other constructor arguments: 'name=value,...'"),
        cross: bool = typer.Option(False, "--cross", help="also pass keys and values (two sequence axes, seq_q and seq_k)"),
        inputs: Optional[str] = typer.Option(None, "--inputs", help="forward arguments to pass, e.g. 'query,key,value'"),
        size: Optional[str] = typer.Option(None, "--size", help="sizes of other axes, e.g. 'd_in=32'"),
        samples: str = typer.Option("3", "--samples", help="sizes at which to run the exported program (0: none)"),
        max_size: Optional[str] = typer.Option(None, "--max-size", help="largest sampled sizes, e.g. 'seq=512,batch=2'"),
        seed: str = typer.Option("0", "--seed", help="seed for the sampled sizes and example values"),
        fmt: str = typer.Option("table", "--format", help="table or json"),
    ) -> None:
        """Export TARGET with dynamic batch and sequence sizes and report its output shape and constraints."""
        if fmt not in FORMATS:
            usage_error(f"unknown --format {fmt!r} (choices: {', '.join(FORMATS)})")
        try:
            widths = _integer("--d-model", d_model, 1), _integer("--heads", heads, 1)
            module, label, built, rebuild = _module(target, preset, *widths, init)
            names = [n.strip() for n in inputs.split(",") if n.strip()] if inputs else None
            result = prove_module(
                module, target=label, inputs=names, cross=cross, sizes={**built, **parse_sizes(size, "--size")},
                samples=_integer("--samples", samples, 0), caps=_caps(max_size), seed=_integer("--seed", seed, 0),
                rebuild=rebuild,
            )
        except UsageError as error:
            usage_error(str(error))
        if fmt == "json":
            typer.echo(json.dumps(result.to_dict(), indent=2))
        else:
            render(result, Console())
        raise typer.Exit(EXIT_OK if result.ok else EXIT_FINDINGS)
