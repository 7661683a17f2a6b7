"""What ``audit`` returns: plain data, rendered by the CLI as a table, JSON or markdown."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class Difference:
    """Why counted differs from the formula, by how much: ``k_proj has no bias: −d_model`` (−768)."""

    text: str
    amount: int
    symbolic: str  # the amount in config symbols, signed: "−d_model", "+(d_model² + d_model)"

    def describe(self) -> str:
        number = f"{self.amount:+,}".replace("-", "−")
        return f"{self.text}: {self.symbolic}" + ("" if self.symbolic.lstrip("+−(").rstrip(")").isdigit() else f" ({number})")


@dataclass(frozen=True)
class Component:
    """One recognised submodule: its parameters counted against the formula for what it is."""

    path: str  # "" is the audited module itself
    kind: str  # attention | feed_forward | norm | embedding | pooler | linear | other
    style: str  # how it was recognised: "q_proj/k_proj/v_proj + out_proj", "LayerNorm", ...
    formula: str  # in config symbols: "4·d_model² + 4·d_model"
    values: dict[str, int]  # the symbols' values: {"d_model": 768}
    expected: int  # the formula at those values
    counted: int  # parameters the module holds (a tied one counts in each component that holds it)
    differences: tuple[Difference, ...] = ()
    parameters: tuple[str, ...] = ()  # full names
    note: str = ""  # what the formula assumes: "bias on q, k, v (the Qwen2 family)"

    @property
    def ok(self) -> bool:
        return not self.differences


@dataclass(frozen=True)
class SharedGroup:
    """One tensor reachable under several names; it counts once. ``module`` is set for cross-layer sharing."""

    names: tuple[str, ...]
    numel: int
    module: bool = False  # True: whole submodules are shared (names are module paths)

    @property
    def saved(self) -> int:
        """Parameters a per-name count would add on top of counting it once."""
        return self.numel * (len(self.names) - 1)


@dataclass(frozen=True)
class Parameter:
    """A dead or frozen parameter: its name and size in the audited module."""

    name: str
    numel: int
    frozen: bool = False


@dataclass(frozen=True)
class Liveness:
    """Result of the forward/backward pass that finds dead parameters."""

    ran: bool
    detail: str  # how it ran ("probe: BertModel with d_model=16, heads=2; input_ids (2, 3)") or why not
    dead: tuple[Parameter, ...] = ()
    interrupted: bool = False  # Ctrl-C during the pass


@dataclass(frozen=True)
class Totals:
    """Unique parameters, and the two conventions people mean by "non-embedding".

    ``non_embedding`` removes the embedding tables only (Kaplan et al. 2020,
    section 2.1: N excludes "all vocabulary and positional embeddings").
    ``non_embedding_strict`` also removes the embeddings' norms and the pooler
    (what is left is the layer stack and any final norm or head, e.g. BERT-base's
    85,054,464 = 12 encoder layers).
    """

    total: int
    embedding_tables: int
    embedding_norms: int
    pooler: int
    shared_once: int  # parameters a per-name count would have counted again

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding_tables

    @property
    def non_embedding_strict(self) -> int:
        return self.total - self.embedding_tables - self.embedding_norms - self.pooler


@dataclass(frozen=True)
class AuditResult:
    """Everything ``audit`` found; ``clean`` is what the CLI's exit code follows."""

    name: str
    components: tuple[Component, ...]
    shared: tuple[SharedGroup, ...]
    frozen: tuple[Parameter, ...]
    liveness: Liveness
    totals: Totals
    notes: tuple[str, ...] = field(default_factory=tuple)
    convention: dict[str, Any] = field(default_factory=dict)  # how the module was called (``shapecheck.convention``)

    @property
    def interrupted(self) -> bool:
        """Ctrl-C stopped the liveness pass (the counts are complete)."""
        return self.liveness.interrupted

    @property
    def mismatches(self) -> tuple[Component, ...]:
        return tuple(c for c in self.components if not c.ok)

    @property
    def dead(self) -> tuple[Parameter, ...]:
        return self.liveness.dead

    @property
    def counts_clean(self) -> bool:
        """Every component matches its formula."""
        return not self.mismatches

    @property
    def clean(self) -> Optional[bool]:
        """True: every check ran and passed; False: a mismatch or a dead parameter; None: counts clean, liveness not run."""
        if self.mismatches or self.dead:
            return False
        return True if self.liveness.ran else None

    @property
    def exit_code(self) -> int:
        """1 on findings; 130 when Ctrl-C stopped the liveness pass; 0 when clean, or clean counts without liveness."""
        return 1 if self.clean is False else 130 if self.interrupted else 0

    def component(self, path: str, kind: str | None = None) -> Component:
        """The component at ``path`` (of ``kind`` when several share a path); KeyError if none."""
        for item in self.components:
            if item.path == path and (kind is None or item.kind == kind):
                return item
        raise KeyError(path)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field, plus the derived totals and the verdict."""
        data = asdict(self)
        data["totals"].update(non_embedding=self.totals.non_embedding, non_embedding_strict=self.totals.non_embedding_strict)
        data["liveness"] = "ran" if self.liveness.ran else "not run"
        data["liveness_detail"] = self.liveness.detail
        data["clean"] = self.clean
        data["mismatches"] = [c.path for c in self.mismatches]
        data["dead"] = [asdict(p) for p in self.dead]
        return data
