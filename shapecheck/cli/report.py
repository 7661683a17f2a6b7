"""``shapecheck report``: per-layer parameters and FLOPs next to their closed forms.

Rendering only: the numbers come from ``shapecheck.report.build_report``.
Exit codes: 0 success; 1 a measured value disagrees with its formula, or
``--strict`` and some op did work without a formula; 2 bad input.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Optional

import typer

from shapecheck.cli.common import EXIT_FINDINGS, usage_error
from shapecheck.counting.models import MODELS
from shapecheck.catalog import PRESETS
from shapecheck.errors import ShapecheckError

FORMATS = ("table", "json", "markdown", "csv")
SIZE_FLAGS = ("d_model", "heads", "layers", "d_ff", "d_k", "d_v", "batch", "vocab", "max_seq")
MODEL_HELP = "; ".join(f"{name}: {kind.help}" for name, kind in MODELS.items())


def parse_size(flag: str, text: Optional[str]) -> Optional[int]:
    """A positive integer from the command line, or a one-line exit 2 naming the flag."""
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        usage_error(f"--{flag.replace('_', '-')} must be a positive integer, got {text!r}")
    if value <= 0:
        usage_error(f"--{flag.replace('_', '-')} must be a positive integer, got {value}")
    return value


def parse_seq(text: Optional[str]) -> Any:
    """A positive integer or a symbol name such as S."""
    if text is None:
        return None
    return parse_size("seq_len", text) if text.lstrip("+-").isdigit() else text


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        heads: Optional[str] = typer.Option(None, "--heads", help="Attention heads h (default 8)."),
        d_model: Optional[str] = typer.Option(None, "--d-model", help="Model width (default 512)."),
        model: Optional[str] = typer.Option(None, "--model", help=f"Which model. {MODEL_HELP}."),
        layers: Optional[str] = typer.Option(None, "--layers", help="Layers per stack (default 6)."),
        d_ff: Optional[str] = typer.Option(None, "--d-ff", help="Feed-forward width (default 4·d_model)."),
        d_k: Optional[str] = typer.Option(None, "--d-k", help="Per-head query/key width (default d_model/h)."),
        d_v: Optional[str] = typer.Option(None, "--d-v", help="Per-head value width (default d_model/h)."),
        seq_len: Optional[str] = typer.Option(None, "--seq-len", help="Sequence length (default 128), or a name such as S for polynomials in it."),
        batch: Optional[str] = typer.Option(None, "--batch", help="Batch size (default 1)."),
        vocab: Optional[str] = typer.Option(None, "--vocab", help="Vocabulary (models with embeddings or heads)."),
        max_seq: Optional[str] = typer.Option(None, "--max-seq", help="Learned position table size (bert, gpt)."),
        preset: Optional[str] = typer.Option(None, "--preset", help=f"Released sizes: {', '.join(PRESETS)}; explicit flags override them."),
        impl: Optional[str] = typer.Option(None, "--impl", help="Attention path of mha/encoder/decoder: sdpa (default) or math; the counts are the same."),
        output_format: str = typer.Option("table", "--format", help=f"One of {', '.join(FORMATS)}."),
        strict: bool = typer.Option(False, "--strict", help="Exit 1 when an op did work that no formula counts."),
        plot: bool = typer.Option(False, "--plot", help="Also chart FLOPs against sequence length, by part (terminal)."),
        plot_file: Optional[str] = typer.Option(None, "--plot-file", help="Write that chart to a PNG/SVG file (needs matplotlib)."),
        all_layers: bool = typer.Option(False, "--all-layers", help="Table: show every layer, not layer 0 and a summary of identical ones."),
        fvcore: bool = typer.Option(False, "--fvcore", help="Add fvcore's count per row as a cross-check (fvcore reports MACs and calls them flops)."),
    ) -> None:
        """Per-layer parameters and FLOPs with their closed-form formulas, measured on the real module.

        Parameters come from the reference module built on the meta device (no weights allocated),
        FLOPs from dispatch-level counting of one forward pass; both sit next to the formula.
        """
        from shapecheck.report import build_report, resolve_config

        if output_format not in FORMATS:
            usage_error(f"unknown --format {output_format!r}; choose one of: {', '.join(FORMATS)}")
        if plot and output_format in ("json", "csv"):
            usage_error(f"--plot draws a terminal chart, which would break --format {output_format} output; "
                        "use --format table or markdown with --plot, or --plot-file")
        sizes = {flag: parse_size(flag, value) for flag, value in zip(SIZE_FLAGS, (d_model, heads, layers, d_ff, d_k, d_v, batch, vocab, max_seq))}
        config = resolve_config(model, preset, seq_len=parse_seq(seq_len), impl=impl, **sizes)
        if plot_file is not None:
            _require_matplotlib()
        result = build_report(config, fvcore=fvcore)
        typer.echo(render(result, output_format, all_layers), nl=False)
        if plot:
            typer.echo(chart(config), nl=False)
        if plot_file:
            write_chart(config, plot_file)
        if not result.agrees or (strict and result.uncounted):
            raise typer.Exit(EXIT_FINDINGS)


def _require_matplotlib() -> None:
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        usage_error("--plot-file needs matplotlib, which is not installed; pip install matplotlib, or use --plot")


def render(result: Any, output_format: str, all_layers: bool = False) -> str:
    """The report as text in one of ``FORMATS``."""
    if output_format == "json":
        from shapecheck.report import report_dict

        return json.dumps(report_dict(result), indent=2) + "\n"
    if output_format == "csv":
        return _csv(result)
    if output_format == "markdown":
        return markdown(result)
    return table(result, all_layers)


def _csv(result: Any) -> str:
    from shapecheck.report import ROW_KEYS, report_dict

    data = report_dict(result)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([*ROW_KEYS, "other_flops_formula", "note", "fvcore_macs"])
    for row in data["rows"]:
        writer.writerow([*(row[k] for k in ROW_KEYS), row["other_flops_formula"], row["note"], row.get("fvcore_macs", "")])
    total = data["total"]
    writer.writerow(["TOTAL", total["params"], "", total["flops"], total["macs"], total["other_flops"], "",
                     total["measured_params"], total["measured_flops"], "", ""])
    for entry in data["uncounted"] or [{"op": "none", "calls": 0, "modules": []}]:
        writer.writerow([f"(uncounted) {entry['op']}", "", "", "", "", "", "", "", "", "",
                         f"{entry['calls']} calls in {', '.join(entry['modules']) or '-'}"])
    return out.getvalue()


# --- shared pieces ---------------------------------------------------------------------------------


def number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value).replace("**", "^").replace("*", "·")


def formula(text: str) -> str:
    return text.replace("**", "^").replace("*", "·")


def mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def header_lines(result: Any) -> list[str]:
    c = result.config
    source = f"preset {c.preset}" if c.preset else "defaults: the paper's base encoder unless flags say otherwise"
    return [
        f"model {c.model} ({source})",
        f"d_model={c.d_model} heads={c.heads} d_k={c.d_k} d_v={c.d_v} d_ff={c.d_ff} layers={c.layers} "
        f"seq_len={c.seq_len} batch={c.batch} vocab={c.vocab} max_seq={c.max_seq} impl={c.impl}",
    ]


def footer_lines(result: Any) -> list[str]:
    lines = []
    for label, entry in result.crossover.items():
        what = "one attention block" if label == "attention" else "one whole layer"
        lines.append(f"crossover ({what}): S² terms overtake S-linear terms at S = {entry['value']} "
                     f"= {formula(entry['formula'])}")
    if result.uncounted:
        for entry in result.uncounted:
            lines.append(f"uncounted: {entry['op']}: {entry['calls']} calls in {', '.join(entry['modules']) or '(root)'}")
    else:
        lines.append("uncounted: none (every op that did arithmetic has a formula)")
    return lines + [f"note: {n}" for n in result.notes]


def collapsed_rows(result: Any) -> list[Any]:
    """Rows with layers 1..n-1 of every identical stack summed into one row (the totals stay the same)."""
    from shapecheck.report import ReportRow

    rows, merged = [], {}
    for row in result.rows:
        stack = next((s for s in result.stacks if row.name.startswith(f"{s.path}.") and
                      not row.name.startswith(f"{s.path}.0.")), None)
        if stack is None:
            rows.append(row)
            continue
        if stack.path not in merged:
            merged[stack.path] = []
            rows.append(stack)
        merged[stack.path].append(row)
    out = []
    for item in rows:
        if isinstance(item, ReportRow):
            out.append(item)
            continue
        group = merged[item.path]
        total = lambda key: sum(getattr(r, key) for r in group)  # noqa: E731
        out.append(ReportRow(
            f"{item.path}.1..{item.size - 1}", "repeat", total("params"), f"{item.size - 1} × {item.path}.0",
            total("flops"), total("macs"), total("other_flops"), f"{item.size - 1} × {item.path}.0", "",
            total("measured_params"), total("measured_flops"), f"{item.size - 1} layers identical to {item.path}.0",
        ))
    return out


# --- table and markdown ----------------------------------------------------------------------------

COLUMNS = ("row", "params", "params formula", "measured params", "", "FLOPs (matmul)", "MACs", "other FLOPs", "FLOPs formula",
           "measured FLOPs", "")


def _cells(row: Any, fvcore: bool = False) -> list[str]:
    extra = [number(row.fvcore_macs) if row.fvcore_macs is not None else ""] if fvcore else []
    return [row.name, number(row.params), formula(row.params_formula), number(row.measured_params),
            mark(row.params_agree), number(row.flops),
            number(row.macs), number(row.other_flops), formula(row.flops_formula), number(row.measured_flops),
            mark(row.flops_agree), *extra]


def _has_fvcore(result: Any) -> bool:
    return any(r.fvcore_macs is not None for r in result.rows)


def _total_cells(result: Any) -> list[str]:
    t = result.total
    return ["TOTAL", number(t["params"]), f"module total: {number(t['model_params'])}", number(t["measured_params"]),
            mark(t["params"] == t["measured_params"] == t["model_params"]), number(t["flops"]), number(t["macs"]),
            number(t["other_flops"]), "", number(t["measured_flops"]), mark(str(t["flops"]) == str(t["measured_flops"]))]


def table(result: Any, all_layers: bool = False) -> str:
    """A rich table, captured as text."""
    from rich.console import Console
    from rich.table import Table

    rows = result.rows if all_layers or not result.stacks else collapsed_rows(result)
    grid = Table(title="shapecheck report", show_lines=False)
    fv = _has_fvcore(result)
    for name in COLUMNS + (("fvcore MACs",) if fv else ()):
        grid.add_column(name, justify="left" if name in ("row", "params formula", "FLOPs formula") else "right")
    for row in rows:
        grid.add_row(*_cells(row, fv))
    grid.add_row(*_total_cells(result), *([""] if fv else []), style="bold")
    console = Console(record=True, width=220, file=io.StringIO())
    for line in header_lines(result):
        console.print(line, markup=False, highlight=False)
    console.print(grid)
    for line in footer_lines(result):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    return console.export_text()


def markdown(result: Any) -> str:
    lines = ["# shapecheck report", "", *[f"- {line}" for line in header_lines(result)], ""]
    fv = _has_fvcore(result)
    columns = COLUMNS + (("fvcore MACs",) if fv else ())
    lines.append("| " + " | ".join(c or "ok" for c in columns) + " |")
    lines.append("|" + "---|" * len(columns))
    for row in result.rows:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in _cells(row, fv)) + " |")
    lines.append("| " + " | ".join(_total_cells(result) + ([""] if fv else [])) + " |")
    lines += ["", "## Uncounted", ""]
    lines += [f"- {e['op']}: {e['calls']} calls in {', '.join(e['modules']) or '(root)'}" for e in result.uncounted] or ["- none"]
    lines += ["", "## Notes", "", *[f"- {line}" for line in footer_lines(result) if not line.startswith("uncounted")]]
    return "\n".join(lines) + "\n"


# --- the FLOPs-against-length chart ------------------------------------------------------------------


def chart_lengths(config: Any) -> list[int]:
    """Powers of two from 64 up to past the whole-layer crossover (at least 8192)."""
    top = max(8192, 8 * config.d_model)
    lengths, n = [], 64
    while n <= top:
        lengths.append(n)
        n *= 2
    return lengths


def chart(config: Any, width: int = 60) -> str:
    """A terminal chart: for each length, one bar split by part in proportion to its FLOPs."""
    from rich.console import Console

    from shapecheck.report import flops_by_kind

    lengths = chart_lengths(config)
    parts = flops_by_kind(config, lengths)
    glyphs = dict(zip(sorted(parts), "█▓▒░#=+:"))
    console = Console(record=True, width=width + 40, file=io.StringIO())
    console.print("FLOPs (matmul + other) against sequence length, share by part:", markup=False)
    for i, n in enumerate(lengths):
        total = sum(v[i] for v in parts.values())
        bar = "".join(glyphs[name] * round(width * parts[name][i] / total) for name in sorted(parts))
        console.print(f"S={n:<6} {bar} {total:.3g}", markup=False, highlight=False)
    console.print("  ".join(f"{glyphs[name]} {name}" for name in sorted(parts)), markup=False, highlight=False)
    return console.export_text()


def write_chart(config: Any, path: str) -> None:
    """The same chart as stacked areas with matplotlib (imported only here; an optional extra)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from shapecheck.report import flops_by_kind

    lengths = chart_lengths(config)
    parts = flops_by_kind(config, lengths)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.stackplot(lengths, *[parts[k] for k in sorted(parts)], labels=sorted(parts))
    ax.set(xscale="log", yscale="log", xlabel="sequence length S", ylabel="FLOPs", title=f"{config.model} FLOPs by part")
    ax.legend(loc="upper left")
    try:
        fig.savefig(path)
    except (OSError, ValueError) as error:
        usage_error(f"cannot write --plot-file {path}: {error}")
    finally:
        plt.close(fig)


__all__ = ["register", "render", "table", "markdown", "chart", "ShapecheckError"]
