"""``shapecheck verify``'s results as text: a table at the terminal's width, markdown, csv or json."""

from __future__ import annotations

import csv
import io
from typing import Any

from shapecheck.render import layout

STATUSES = ("passed", "failed", "skipped", "warning")
COLUMNS = (layout.Column("property"), layout.Column("status"), layout.Column("details", fold=True))


def details(result: Any) -> str:
    """The message, then the minimal counterexample and the hint where there are any."""
    lines = [result.message] if result.message else []
    if result.status != "passed" and result.counterexample:
        lines.append("minimal: " + ", ".join(f"{k}={v}" for k, v in result.counterexample.items()))
    if result.status != "passed" and result.hint:
        lines.append("hint: " + result.hint)
    return "\n".join(lines)


def summary(report: Any) -> str:
    """The counts, then what did not run that the verdict depends on (the reference, a property asked for), and why."""
    counts = {s: sum(r.status == s for r in report.results) for s in STATUSES}
    line = ", ".join(f"{n} {s}" + ("s" if s == "warning" and n != 1 else "") for s, n in counts.items())
    lines = [line, *(f"{r.name} skipped: {r.reason}" for r in report.not_run)]
    if report.interrupted:
        lines.append("interrupted: the properties above finished; the rest did not run")
    elif not report.checked:
        lines.append(nothing_checked(report))
    return "\n".join(lines)


def nothing_checked(report: Any) -> str:
    """The exit-2 verdict of a run in which every selected property was skipped."""
    first = next((r for r in report.results if r.status == "skipped"), None)
    why = f" ({first.name}: {first.reason})" if first else ""
    return f"nothing was checked: every selected property was skipped{why}"


def table(report: Any) -> str:
    """The mapping and calling convention chosen, then one row per property, then the counts."""
    rows = [(r.name, r.status, details(r)) for r in report.results]
    head = [f"{report.target}  built as {report.construction}", *(f"  {note}" for note in report.notes)]
    return layout.text(*head, layout.table(COLUMNS, rows, show_lines=True), summary(report))


def markdown(report: Any) -> str:
    lines = [f"# verify {report.target}", "", f"built as `{report.construction}`", "", *[f"- {n}" for n in report.notes], ""]
    lines += ["| property | status | details |", "|---|---|---|"]
    lines += [f"| {r.name} | {r.status} | {_cell(details(r))} |" for r in report.results]
    return "\n".join([*lines, "", summary(report)]) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def csv_text(report: Any) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["property", "status", "message", "counterexample", "hint"])
    for r in report.results:
        example = ", ".join(f"{k}={v}" for k, v in (r.counterexample or {}).items())
        writer.writerow([r.name, r.status, r.message, example, r.hint])
    return out.getvalue()


def json_text(report: Any) -> str:
    return layout.as_json(report.as_dict(), report.exit_code)


RENDERERS = {"table": table, "json": json_text, "markdown": markdown, "csv": csv_text}
