"""``shapecheck prove``'s renderers (table, markdown, csv, json) and the status line it shows on stderr.

The table fits ``layout.width()`` (80 columns when piped); long shapes fold
inside their cell. "shapes check out" is printed only when every check ran.
"""

from __future__ import annotations

import csv
import io
from typing import Optional

from shapecheck.prove.result import ProofResult
from shapecheck.render import layout

COLUMNS = (layout.Column("", fold=True), layout.Column("shape for every size", fold=True))


def _shape(shape: list) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ")"


def _samples(result: ProofResult) -> str:
    if not result.samples:
        return "none run"
    passed = sum(s.problem is None for s in result.samples)
    tried = "; ".join(f"{s.kind} " + " ".join(f"{k}={v}" for k, v in s.sizes.items()) for s in result.samples)
    return f"{passed}/{len(result.samples)} as expected ({tried})"


def _lines(result: ProofResult) -> list[str]:
    lines = [f"constraints: {'; '.join(result.constraints) or 'none'}"]
    lines += [f"bound: {b}" for b in result.bounds]
    lines.append(f"samples: {_samples(result)}")
    lines += [f"note: {s.kind} " + " ".join(f"{k}={v}" for k, v in s.sizes.items()) + f": {s.note}"
              for s in result.samples if s.note and s.kind != "past"]
    lines += [f"problem ({p.kind}): {p.message}" for p in result.problems]
    lines += [f"note: {n}" for n in result.notes]
    timing = f" (export {result.export_seconds:.2f} s, total {result.seconds:.2f} s)" if result.ok else ""
    return lines + [result.verdict + timing]


def table(result: ProofResult, at: Optional[int] = None) -> str:
    rows = [[f"input {name}", _shape(shape)] for name, shape in result.inputs.items()]
    rows += [[name, _shape(shape)] for name, shape in result.outputs.items()]
    width = at or layout.width()
    return layout.text(f"prove {result.target}", layout.table(COLUMNS, rows), *_lines(result), at=width)


def markdown(result: ProofResult) -> str:
    out = [f"## prove: {result.target}", "", "| | shape for every size |", "|---|---|"]
    out += [f"| input `{name}` | {_shape(shape)} |" for name, shape in result.inputs.items()]
    out += [f"| `{name}` | {_shape(shape)} |" for name, shape in result.outputs.items()]
    return "\n".join(out + [""] + [f"- {line}" for line in _lines(result)]) + "\n"


def csv_text(result: ProofResult) -> str:
    """One row per input and output: what, name, shape; then one per constraint and problem."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["what", "name", "value"])
    writer.writerows(["input", name, _shape(shape)] for name, shape in result.inputs.items())
    writer.writerows(["output", name, _shape(shape)] for name, shape in result.outputs.items())
    writer.writerows(["constraint", "", c] for c in result.constraints)
    writer.writerows(["problem", p.kind, p.message] for p in result.problems)
    writer.writerow(["verdict", "", result.verdict])
    return out.getvalue()


def exit_code(result: ProofResult) -> int:
    return 130 if result.interrupted else 0 if result.ok else 1


def json_text(result: ProofResult) -> str:
    return layout.as_json(result.to_dict(), exit_code(result))


RENDERERS = {"table": table, "markdown": markdown, "csv": csv_text, "json": json_text}
