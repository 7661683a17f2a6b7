"""What ``prove`` returns: symbolic shapes, constraints, problems, and the samples it ran."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from shapecheck.prove.sampling import Sample
from shapecheck.prove.symbols import Entry

KINDS = ("annotation", "sample", "export")


@dataclass(frozen=True)
class Problem:
    """A finding: an annotation the symbolic shapes contradict, a failing sample, a failed export."""

    kind: str  # one of KINDS
    message: str


@dataclass(frozen=True)
class ProofResult:
    """Shapes for every batch and sequence size at once, with what they rest on.

    ``inputs`` and ``outputs`` map argument names and output labels to shapes whose
    entries are axis names (``"batch"``, ``"seq"``, ``"seq_q + seq_k"``) or sizes.
    """

    target: str
    inputs: dict[str, list[Entry]]
    outputs: dict[str, list[Entry]]
    constraints: list[str]
    problems: list[Problem] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    export_seconds: float = 0.0
    seconds: float = 0.0
    bounds: list[str] = field(default_factory=list)  # confirmed bounds and where they come from
    unchecked: list[str] = field(default_factory=list)  # checks that did not run, and why
    interrupted: bool = False
    convention: dict[str, Any] = field(default_factory=dict)  # how forward was called (``shapecheck.convention``)
    notes: list[str] = field(default_factory=list)  # what the convention probe decided, or why it could not

    @property
    def output_shape(self) -> Optional[list[Entry]]:
        """The first (usually only) returned tensor's shape."""
        return next(iter(self.outputs.values()), None)

    @property
    def ok(self) -> bool:
        """No problem found (see ``checked`` for whether every check ran)."""
        return not self.problems

    @property
    def checked(self) -> bool:
        """Every check ran: samples at both ends, bounds confirmed, nothing interrupted."""
        return bool(self.samples) and not self.unchecked and not self.interrupted

    @property
    def verdict(self) -> str:
        """One line: "shapes check out" only when every check ran and passed."""
        if self.problems:
            return f"{len(self.problems)} problem(s) found"
        if self.checked:
            return "shapes check out"
        return "shapes proved symbolically; not checked: " + "; ".join(self.unchecked or ["no size was run"])

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``shapecheck prove --format json``)."""
        return {
            "target": self.target,
            "inputs": self.inputs,
            "output_shape": self.output_shape,
            "outputs": self.outputs,
            "constraints": self.constraints,
            "problems": [{"kind": p.kind, "message": p.message} for p in self.problems],
            "bounds": self.bounds,
            "samples": [{"sizes": s.sizes, "kind": s.kind, "ok": s.problem is None} for s in self.samples],
            "checked": self.checked,
            "unchecked": self.unchecked,
            "verdict": self.verdict,
            "export_seconds": round(self.export_seconds, 3),
            "seconds": round(self.seconds, 3),
            "convention": self.convention,
            "notes": self.notes,
        }
