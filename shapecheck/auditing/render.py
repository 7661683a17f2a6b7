"""Audit results as rows and lines: repeated layers folded (``encoder.layer.*.attention ×12``), totals, the verdict.

Library code: returns strings and rows, prints nothing (``shapecheck/render/audit.py`` draws them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shapecheck.auditing.result import AuditResult, Component


@dataclass(frozen=True)
class Row:
    """Components that differ only by their layer index, shown once with how many there are."""

    path: str  # with layer indices replaced by *
    repeats: int
    component: Component  # the first of them

    @property
    def label(self) -> str:
        path = self.path or "(the module itself)"
        return f"{path} ×{self.repeats}" if self.repeats > 1 else path


def _pattern(path: str) -> str:
    return re.sub(r"(^|\.)\d+(?=\.|$)", r"\1*", path)


def _key(component: Component) -> tuple:
    diffs = tuple((d.text, d.amount) for d in component.differences)
    return (_pattern(component.path), component.kind, component.style, component.formula,
            tuple(component.values.items()), component.counted, component.expected, diffs)


def rows(result: AuditResult) -> list[Row]:
    """One row per distinct component, repeated layers folded, in model order of first appearance."""
    groups: dict[tuple, list[Component]] = {}
    for component in result.components:
        groups.setdefault(_key(component), []).append(component)
    found = []
    for key, members in groups.items():
        path = members[0].path if len(members) == 1 else key[0]
        found.append(Row(path, len(members), members[0]))
    return found


def values_text(component: Component) -> str:
    return ", ".join(f"{k}={v:,}" for k, v in component.values.items())


def verdict(result: AuditResult) -> str:
    """One line: clean only when every check ran; "liveness not checked (why)" when it could not run."""
    if result.clean:
        return "clean: every parameter matches its formula and receives a gradient"
    if result.clean is None:
        return f"parameters accounted for; liveness not checked ({result.liveness.detail.removeprefix('not run: ')})"
    parts = []
    if result.mismatches:
        parts.append(f"{len(result.mismatches)} submodule(s) differ from their formula")
    if result.dead:
        parts.append(f"{len(result.dead)} dead parameter(s)")
    return "; ".join(parts)


def rows_sum(result: AuditResult) -> int:
    """Σ counted × multiplicity over the rows: the total, plus what tied parameters add once per extra holder."""
    return sum(row.component.counted * row.repeats for row in rows(result))


def total_lines(result: AuditResult) -> list[tuple[str, int]]:
    """(label, value) for the totals block, both "non-embedding" conventions named, and the rows' sum."""
    t = result.totals
    lines = [("rows × their multiplicity", rows_sum(result)), ("total (shared parameters counted once)", t.total),
             ("embedding tables", t.embedding_tables)]
    lines.append(("non-embedding, tables removed (Kaplan et al. 2020)", t.non_embedding))
    lines.append(("non-embedding, tables + their norms + pooler removed", t.non_embedding_strict))
    if t.shared_once:
        lines.append(("counted once that a per-name sum counts again", t.shared_once))
    return lines


def finding_lines(result: AuditResult) -> list[str]:
    """Shared groups, frozen and dead parameters, and how the liveness pass ran."""
    lines = []
    for group in result.shared:
        what = "module shared at" if group.module else "tied"
        lines.append(f"shared: {what} {' = '.join(group.names)} ({group.numel:,} parameters, counted once)")
    for param in result.frozen:
        lines.append(f"frozen: {param.name} ({param.numel:,}, requires_grad=False)")
    for param in result.dead:
        lines.append(f"dead: {param.name} ({param.numel:,}) receives no gradient" + (" (also frozen)" if param.frozen else ""))
    lines.append(f"liveness: {result.liveness.detail}")
    return lines + list(result.notes)
