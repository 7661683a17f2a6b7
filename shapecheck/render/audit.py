"""``shapecheck audit``'s renderers: table, markdown, csv and json, from an ``AuditResult``.

The table fits ``layout.width()`` (80 columns when piped): the formula and
differences columns fold inside their cells; repeated layers are one row with
their multiplicity (``encoder.layer.*.attention ×12``).
"""

from __future__ import annotations

import csv
import io

from shapecheck.auditing.render import finding_lines, rows, total_lines, values_text, verdict
from shapecheck.auditing.result import AuditResult
from shapecheck.render import layout

COLUMNS = (
    layout.Column("submodule", fold=True), layout.Column("kind", fold=True), layout.Column("formula", fold=True),
    layout.Column("params", justify="right"), layout.Column("differences", fold=True),
)


def _cells(result: AuditResult) -> list[list[str]]:
    found = []
    for row in rows(result):
        c = row.component
        diffs = "; ".join(d.describe() for d in c.differences) or "ok"
        counted = f"{c.counted:,}" if c.counted == c.expected else f"{c.counted:,}\n(formula {c.expected:,})"
        label = row.label + (f"\n{c.style}" if c.kind in ("attention", "feed_forward") else "") + (f"\n{c.note}" if c.note else "")
        found.append([label, c.kind, f"{c.formula}\n{values_text(c)}", counted, diffs])
    return found


def table(result: AuditResult, at: int | None = None) -> str:
    width = at or layout.width()
    lines = [layout.text(result.name, at=width).rstrip("\n"), ""]
    body = layout.text(layout.table(COLUMNS, _cells(result)), at=width).rstrip("\n")
    totals = [f"{label:<{max(8, width - 16)}}{value:>16,}"[-width:] if len(label) + 16 <= width else f"{label}: {value:,}"
              for label, value in total_lines(result)]
    tail = layout.text(*finding_lines(result), at=width).rstrip("\n")
    return "\n".join([*lines, body, tail, *totals, verdict(result)]) + "\n"


def markdown(result: AuditResult) -> str:
    """The audit as a markdown document: a table of components, findings, totals, verdict."""
    out = [f"## audit: {result.name}", "", "| submodule | kind | formula | values | counted | expected | differences |",
           "|---|---|---|---|---:|---:|---|"]
    for row in rows(result):
        c = row.component
        diffs = "<br>".join(d.describe() for d in c.differences) or "—"
        out.append(f"| `{row.label}` | {c.kind} | {c.formula} | {values_text(c)} | {c.counted:,} | {c.expected:,} | {diffs} |")
    out += ["", *(f"- {line}" for line in finding_lines(result)), "", "| total | parameters |", "|---|---:|"]
    out += [f"| {label} | {value:,} |" for label, value in total_lines(result)]
    return "\n".join(out + ["", f"**{verdict(result)}**", ""])


def csv_text(result: AuditResult) -> str:
    """One row per folded component: submodule, repeats, kind, formula, values, counted, expected, differences."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["submodule", "repeats", "kind", "formula", "values", "counted", "expected", "differences"])
    for row in rows(result):
        c = row.component
        writer.writerow([row.path, row.repeats, c.kind, c.formula, values_text(c), c.counted, c.expected,
                         "; ".join(d.describe() for d in c.differences)])
    return out.getvalue()


def json_text(result: AuditResult) -> str:
    return layout.as_json(result.to_dict(), result.exit_code)


RENDERERS = {"table": table, "markdown": markdown, "csv": csv_text, "json": json_text}
