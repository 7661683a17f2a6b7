"""Rendering of a model report (``shapecheck.counting.tree.ModelReport``): table, markdown, csv, json.

The table fits ``layout.width()``: below 120 columns the formulas move to their own line under
each recognised row, so no line is wider than the terminal (80 when piped).
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from typing import Any, Optional

from shapecheck.counting.tree import ModelReport, Row
from shapecheck.display import show
from shapecheck.render import layout

WIDE = 120
UNITS = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def human_bytes(n: Optional[int]) -> str:
    if n is None:
        return "n/a"
    for size, unit in UNITS:
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def short(n: Any) -> str:
    """1234567 -> '1.23M' (tables); JSON keeps exact integers; a polynomial stays whole."""
    if not isinstance(n, int):
        return show(n)
    for size, unit in ((10**15, "P"), (10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k")):
        if abs(n) >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


def mark(row: Row) -> str:
    if row.expected_params is None and row.expected_flops is None:
        return ""
    return "✓" if row.agrees else "✗"


def exit_code(report: ModelReport, strict: bool = False) -> int:
    """1 when a measured value differs from its closed form, or (``strict``) when some op has no formula."""
    return 0 if report.agrees and not (strict and report.uncounted) else 1


def as_dict(report: ModelReport) -> dict[str, Any]:
    """The JSON schema, shared by markdown and csv: config, rows, total (per token), memory (bytes), uncounted, notes.

    A polynomial (``--seq-len S``) is written as its sympy text, e.g. ``"32*S**2 + 128*S"``.
    """
    rows = [{**asdict(r), "agrees": r.agrees if r.expected_params is not None else None} for r in report.rows]
    return {"config": {"model": report.name, **report.sizes, **asdict(report.settings)}, "rows": rows,
            "total": {**report.total, "per_token": report.per_token}, "memory": report.memory,
            "kernel": report.kernel or None, "crossover": report.crossover, "uncounted": report.uncounted,
            "notes": report.notes, "convention": report.convention}


def _header(report: ModelReport) -> list[str]:
    s = report.settings
    return [f"{report.name}", f"mode={s.mode} batch={s.batch} seq_len={s.seq_len}"
            + (f" context={s.context}" if s.mode == "decode" else "") + f" dtype={s.dtype}"]


def crossover_lines(report: ModelReport) -> list[str]:
    lines = []
    for label, entry in report.crossover.items():
        formula, value = show(entry["formula"]), str(entry["value"])
        same = formula == value
        lines.append(f"crossover ({label} {entry['module'] or '(model)'}): S² terms overtake S-linear terms at "
                     f"S = {value}{'' if same else ' = ' + formula}")
    return lines


def _footer(report: ModelReport) -> list[str]:
    t, m = report.total, report.memory
    per_token = f" ({t['flops_per_token']:,} per token)" if "flops_per_token" in t else ""
    lines = [f"total: params {t['params']:,} (active {t['active_params']:,}); FLOPs {show(t['flops'])}"
             f"{per_token}; MACs {show(t['macs'])}"]
    if m:
        lines.append("memory: " + ", ".join(f"{k} {human_bytes(v)}" for k, v in m.items()
                                            if v is not None or k != "train_peak"))
    for name, entry in report.per_token.get("estimates", {}).items():
        lines.append(f"per token, {name}: forward {entry['forward']:,}, train {entry['train']:,} ({entry['convention']})")
    if "utilisation" in report.per_token:
        u = report.per_token["utilisation"]
        lines.append(f"MFU: {100 * u['mfu']:.1f}% ({u['mode']}: {u['flops_per_token']:,} FLOPs/token × "
                     f"{u['tokens_per_second']:,} tokens/s over a {u['peak_tflops']:g} TFLOPS peak); "
                     f"HFU: {100 * u['hfu']:.1f}% ({u['hardware_flops_per_token']:,} hardware FLOPs/token)")
        lines.extend(f"note: {name.upper()}: {text}" for name, text in u["conventions"].items())
    lines += crossover_lines(report)
    lines += [f"uncounted: {e['op']}: {e['calls']} calls" for e in report.uncounted] or ["uncounted: none"]
    return lines + [f"note: {n}" for n in report.notes]


def _cells(row: Row) -> list[str]:
    return [row.path, row.kind, short(row.params), short(row.flops), mark(row)]


def _fvcore(report: ModelReport) -> bool:
    return any(r.fvcore_macs is not None for r in report.rows)


def table(report: ModelReport, at: int = 0) -> str:
    """All columns side by side from ``WIDE`` columns; below, one block of lines per row (no line wider than ``at``)."""
    at = at or layout.width()
    if at < WIDE:
        return layout.text(*_header(report), *_blocks(report, at), *_footer(report), at=at)
    columns = [layout.Column("module", fold=True), layout.Column("kind"), layout.Column("params", "right"),
               layout.Column("FLOPs", "right"), layout.Column("formula (FLOPs)", fold=True), layout.Column("", "center")]
    body = [[r.path, r.kind, f"{r.params:,}", show(r.flops), r.flops_formula or "", mark(r)] for r in report.rows]
    if _fvcore(report):
        columns.insert(4, layout.Column("fvcore MACs", "right"))
        for cells, r in zip(body, report.rows):
            cells.insert(4, "" if r.fvcore_macs is None else f"{r.fvcore_macs:,}")
    return layout.text(*_header(report), layout.table(columns, body), *_footer(report), at=at)


def wrapped(text: str, at: int) -> list[str]:
    """``text`` indented under its row and wrapped at word breaks to ``at`` columns."""
    import textwrap

    return textwrap.wrap(text, at, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)


def _measured_line(what: str, measured: Any, formula: Optional[str], expected: Any) -> str:
    if formula is None or expected is None:
        return f"{what} {show(measured)}"
    if formula == show(expected):  # a polynomial in --seq-len S is its own value
        return f"{what} {formula}, measured {show(measured)} {'✓' if expected == measured else '✗'}"
    return f"{what} {formula} = {show(expected)}, measured {show(measured)} {'✓' if expected == measured else '✗'}"


def _blocks(report: ModelReport, at: int) -> list[str]:
    lines = []
    for r in report.rows:
        lines.append(f"{r.path} ({r.kind}{', ' + r.detail if r.detail else ''})")
        lines += wrapped(_measured_line("params", r.params, r.params_formula, r.expected_params), at)
        lines += wrapped(_measured_line("FLOPs", r.flops, r.flops_formula, r.expected_flops), at)
        if r.fvcore_macs is not None:
            lines += wrapped(f"fvcore {r.fvcore_macs:,} MACs = {2 * r.fvcore_macs:,} FLOPs", at)
    return lines


def markdown(report: ModelReport) -> str:
    lines = ["# shapecheck report", "", *[f"- {line}" for line in _header(report)], "",
             "| module | kind | params | params formula | FLOPs | FLOPs formula | ok |", "|---|---|---|---|---|---|---|"]
    for r in report.rows:
        cells = [r.path, r.kind, f"{r.params:,}", r.params_formula or "", show(r.flops), r.flops_formula or "", mark(r)]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines + ["", *[f"- {line}" for line in _footer(report)]]) + "\n"


def csv_text(report: ModelReport) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["module", "kind", "params", "expected_params", "params_formula", "flops", "expected_flops",
                     "flops_formula", "count", "fvcore_macs"])
    for r in report.rows:
        writer.writerow([r.path, r.kind, r.params, r.expected_params, r.params_formula, r.flops, r.expected_flops,
                         r.flops_formula, r.count, r.fvcore_macs])
    t = report.total
    writer.writerow(["TOTAL", "", t["params"], "", "", t["flops"], "", "", "", ""])
    for key, value in report.memory.items():
        writer.writerow([f"(memory) {key}", "bytes", value, "", "", "", "", "", "", ""])
    for e in report.uncounted:
        writer.writerow([f"(uncounted) {e['op']}", "", "", "", "", "", "", "", e["calls"], ""])
    return out.getvalue()


def render(report: ModelReport, output_format: str, strict: bool = False) -> str:
    if output_format == "json":
        return layout.as_json(as_dict(report), exit_code(report, strict))
    if output_format == "csv":
        return csv_text(report)
    if output_format == "markdown":
        return markdown(report)
    return table(report)
