"""``audit(module)``: recognise, count against the formulas, find shared, frozen and dead parameters, total."""

from __future__ import annotations

from typing import Optional

from torch import nn

from shapecheck.auditing import liveness
from shapecheck.auditing.expected import components
from shapecheck.auditing.inputs import Inputs
from shapecheck.auditing.recognize import recognize
from shapecheck.auditing.result import AuditResult, Component, Liveness, Parameter, Totals
from shapecheck.auditing.sharing import shared_groups
from shapecheck.convention import decide, undecided
from shapecheck.counting.params import count_parameters

LIVENESS_LIMIT = 20_000_000  # parameters: above this, the pass needs a small probe instance


def _embedding_side(path: str) -> bool:
    """A path inside the embeddings (``embeddings.LayerNorm``, ``emb_ln``, ``ln_embd``)."""
    return any("emb" in part.lower() for part in path.split("."))


def totals(parts: list[Component], model: nn.Module, shared_once: int) -> Totals:
    """Unique parameters and the pieces the two "non-embedding" conventions remove."""
    tables = sum(c.counted for c in parts if c.kind == "embedding")
    norms = sum(c.counted for c in parts if c.kind == "norm" and _embedding_side(c.path))
    pooler = sum(c.counted for c in parts if c.kind == "pooler" or (c.kind == "other" and "pooler" in c.path.split(".")))
    return Totals(count_parameters(model), tables, norms, pooler, shared_once)


def _on_meta(model: nn.Module) -> bool:
    return any(p.is_meta for p in model.parameters())


def _liveness(model: nn.Module, probe: Optional[nn.Module], inputs: Optional[Inputs], limit: int) -> Liveness:
    if probe is not None:
        return liveness.check(probe, model, inputs, f"a small {type(probe).__name__}")
    if _on_meta(model):
        return Liveness(False, "not run: the module is on the meta device; pass probe= a small instance of the same class")
    size = count_parameters(model)
    if size > limit:
        return Liveness(False, f"not run: {size:,} parameters is over {limit:,}; pass probe= a small instance of the same class")
    return liveness.check(model, model, inputs)


def audit(
    module: nn.Module,
    *,
    probe: Optional[nn.Module] = None,
    inputs: Optional[Inputs] = None,
    name: Optional[str] = None,
    liveness_limit: int = LIVENESS_LIMIT,
) -> AuditResult:
    """Audit ``module``'s parameters against the attention, feed-forward, norm and embedding formulas.

    Counting reads shapes only, so ``module`` may live on the meta device. Dead
    parameters are found with a forward/backward pass on ``probe`` (a small
    instance of the same class) or, when ``module`` is real and at most
    ``liveness_limit`` parameters, on ``module`` itself (its ``.grad`` and
    ``requires_grad`` are left as they were). ``inputs`` overrides the
    arguments read from ``forward``'s signature.
    """
    if not isinstance(module, nn.Module):
        from shapecheck.errors import UsageError

        raise UsageError(f"audit() takes an nn.Module, got {type(module).__name__}")
    parts = components(recognize(module))
    shared = shared_groups(module)
    frozen = tuple(Parameter(n, p.numel(), True) for n, p in module.named_parameters() if not p.requires_grad)
    checked = _liveness(module, probe, inputs, liveness_limit)
    sums = totals(parts, module, sum(g.saved for g in shared))
    called = probe if probe is not None else module
    decision = undecided(called, "the probe was interrupted (Ctrl-C)") if checked.interrupted else decide(called)  # kept from the liveness pass
    notes = (decision.note(),) if decision.note() and inputs is None and not _on_meta(called) else ()  # only a module called
    return AuditResult(name or type(module).__name__, tuple(parts), shared, frozen, checked, sums, notes, decision.as_json())
