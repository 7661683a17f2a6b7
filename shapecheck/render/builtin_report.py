"""Rendering of the built-in models' report (``shapecheck.report.Report``): table, markdown, csv, json.

The table fits ``layout.width()``: from 200 columns every column side by side; below that the
values in one row and the formulas on the line under it, so no line is wider than the terminal.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from shapecheck.display import show
from shapecheck.render import layout

WIDE = 200


def render(result: Any, output_format: str, all_layers: bool = False, exit_code: int = 0) -> str:
    """The report as text in one of ``FORMATS`` (JSON with the verdict fields for ``exit_code``)."""
    if output_format == "json":
        from shapecheck.report import report_dict

        return layout.as_json(report_dict(result), exit_code)
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
    return f"{value:,}" if isinstance(value, int) else show(str(value))


def formula(text: str) -> str:
    return show(text)


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


def table(result: Any, all_layers: bool = False, at: int = 0) -> str:
    """The table at ``at`` columns (default the terminal's): every column when wide, else one block per row."""
    at = at or layout.width()
    rows = result.rows if all_layers or not result.stacks else collapsed_rows(result)
    fv = _has_fvcore(result)
    if at < WIDE:
        return layout.text(*header_lines(result), *_narrow(rows, result, fv, at), *footer_lines(result), at=at)
    columns = [layout.Column(name, "left" if name in ("row", "params formula", "FLOPs formula") else "right",
                             fold=name in ("row", "params formula", "FLOPs formula"))
               for name in COLUMNS + (("fvcore MACs",) if fv else ())]
    body = [_cells(row, fv) for row in rows] + [_total_cells(result) + ([""] if fv else [])]
    grid = layout.table(columns, body, title="shapecheck report")
    return layout.text(*header_lines(result), grid, *footer_lines(result), at=at)


def _narrow(rows: list, result: Any, fv: bool, at: int) -> list[str]:
    """Each row as a name line, then params and FLOPs each as ``formula = value, measured ✓`` lines."""
    lines = []
    for row in rows:
        c = _cells(row, fv)
        fvcore = f"; fvcore {c[11]} MACs" if fv and c[11] else ""
        lines += [c[0], *_wrapped(f"params {c[2]} = {c[1]}, measured {c[3]} {c[4]}", at),
                  *_wrapped(f"FLOPs {c[8]} = {c[5]}, measured {c[9]} {c[10]}; other FLOPs {c[7]}{fvcore}", at)]
    t = _total_cells(result)
    lines += [f"TOTAL params {t[1]} ({t[2]}), measured {t[3]} {t[4]}",
              f"TOTAL FLOPs {t[5]}, measured {t[9]} {t[10]}; MACs {t[6]}; other FLOPs {t[7]}"]
    return lines


def _wrapped(text: str, at: int) -> list[str]:
    from shapecheck.render.report import wrapped

    return wrapped(text, at)


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


