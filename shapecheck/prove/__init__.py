"""``prove``: output shapes and constraints for every batch and sequence size at once.

    >>> result = prove(MultiHeadAttention(16, 2))
    >>> result.output_shape, result.constraints, result.ok
    (['batch', 'seq', 16], ['d_model % heads == 0'], True)

The module is exported with ``torch.export`` (non-strict, so ``@checked`` checks
the annotations on symbolic shapes while it traces) with ``batch`` and the
sequence axes dynamic. The program's size symbols are named after the axes;
its ranges, equalities, specialisations and assertions become constraints; the
return annotation is compared with the symbolic output shape; bounds from
position tables, causal masks, rotary caches, ALiBi biases and position tensors built
in forward are confirmed by running at N
and N + 1 (``bounds.py``); and the program is run at both ends of every range
next to eager ``forward`` to catch silent specialisation (``checking.py``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Optional, Union

import torch
from torch import nn

from shapecheck.errors import UsageError
from shapecheck.prove.annotations import annotation_problems
from shapecheck.prove.checking import Checked, Progress, check
from shapecheck.prove.constraints import all_constraints
from shapecheck.prove.export import Exported, ExportFailure, export_module, input_symbols
from shapecheck.prove.inputs import EVEN_SIZES, EXAMPLE_SIZES, InputPlan, plan_inputs
from shapecheck.prove.probe import Rebuild, divisibility_constraints
from shapecheck.prove.result import Problem, ProofResult
from shapecheck.prove.sampling import DEFAULT_CAPS, Sample
from shapecheck.prove.symbols import Naming, name_symbols
from shapecheck.prove.targets import prove_preset, prove_target

__all__ = ["DEFAULT_CAPS", "Problem", "ProofResult", "Sample", "prove", "prove_module", "prove_preset", "prove_target"]


def prove(
    module_or_target: Union[nn.Module, str],
    *,
    d_model: Optional[int] = None,
    heads: Optional[int] = None,
    init: Optional[dict[str, object]] = None,
    **options: object,
) -> ProofResult:
    """Prove a module instance, or a ``file.py:Name`` / ``pkg.mod:Name`` target built with its own defaults.

    ``d_model``/``heads`` replace the constructor's defaults when given; ``options`` are
    those of ``prove_module``. Raises ``UsageError`` for a target that cannot be loaded
    or built, or arguments that cannot be sized.
    """
    if isinstance(module_or_target, nn.Module):
        return prove_module(module_or_target, **options)  # type: ignore[arg-type]
    return prove_target(module_or_target, d_model=d_model, heads=heads, init=init, **options)


def prove_module(
    module: nn.Module,
    *,
    target: Optional[str] = None,
    inputs: Optional[list[str]] = None,
    cross: bool = False,
    sizes: Optional[dict[str, int]] = None,
    samples: int = 3,
    caps: Optional[dict[str, int]] = None,
    seed: int = 0,
    rebuild: Optional[Rebuild] = None,
    progress: Optional[Progress] = None,
) -> ProofResult:
    """Export ``module`` with dynamic batch and sequence axes and report its symbolic shapes.

    ``inputs`` names the ``forward`` arguments to pass (default: the required ones,
    plus keys and values with ``cross=True``); ``sizes`` gives axis sizes the config
    does not (``{"d_in": 32}``); ``samples`` runs of the exported program check the
    proof, at sizes up to ``caps`` (default ``DEFAULT_CAPS``); ``rebuild(d_model,
    heads)`` lets the config's divisibility rule be probed; ``progress(text)`` hears
    what runs now (the CLI's status line). Ctrl-C during the runs returns what finished
    (``result.interrupted``).
    """
    start = time.perf_counter()
    label = target or type(module).__name__
    plan = plan_inputs(module, names=inputs, cross=cross, sizes=sizes)
    static = sizes or {}
    was_training = module.training
    module.eval()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            result = _prove(module, plan, label, samples, caps, seed, progress or (lambda text: None))
    finally:
        module.train(was_training)
    extra = divisibility_constraints(module, rebuild=rebuild, d_model=static.get("d_model"), heads=static.get("heads"))
    note = plan.decision.note() if plan.decision is not None else None
    return replace(_finish(result, extra, time.perf_counter() - start), convention=plan.convention,
                   notes=[note] if note else [])


def _export_at_examples(module: nn.Module, plan: InputPlan) -> Exported:
    """Export at odd example sizes, or, when those cannot be traced, at even ones."""
    try:
        return export_module(module, plan, plan.examples(EXAMPLE_SIZES))
    except ExportFailure as failure:
        try:
            return export_module(module, plan, plan.examples(EVEN_SIZES))
        except ExportFailure:
            raise failure from None


def _prove(module: nn.Module, plan: InputPlan, label: str, samples: int, caps: Optional[dict[str, int]], seed: int,
           progress: Progress) -> ProofResult:
    progress(f"exporting {type(module).__name__}.forward")
    try:
        exported = _export_at_examples(module, plan)
    except ExportFailure as failure:
        return _failed(module, plan, plan.examples(EXAMPLE_SIZES), label, str(failure))
    if not exported.output_shapes():  # nothing to prove: no shape is a passing shape
        raise UsageError(f"{label}: forward returns no tensor (None, or only non-tensor values); there is no output shape to prove")
    naming = name_symbols(plan, exported.input_shapes(plan))
    problems = _annotation_problems(module, exported, plan, naming)
    ran = check(module, exported, plan, naming, count=samples, caps=caps, seed=seed, progress=progress)
    problems += [Problem("sample", s.problem) for s in ran.samples if s.problem]
    return ProofResult(
        label,
        {name: naming.shape(shape) for name, shape in exported.input_shapes(plan).items()},
        {name: naming.shape(shape) for name, shape in exported.output_shapes().items()},
        _constraints(all_constraints(exported.program, naming), ran),
        problems,
        ran.samples,
        exported.seconds,
        bounds=[f"{b.constraint} ({b.source}; runs at {b.size}, fails at {b.size + 1})" for b in ran.bounds],
        unchecked=ran.unchecked,
        interrupted=ran.interrupted,
    )


def _constraints(found: list[str], ran: Checked) -> list[str]:
    """Export's constraints, less lower bounds forward disproved, plus the confirmed bounds."""
    kept = [c for c in found if not _disproved(c, ran.samples)]
    return kept + [b.constraint for b in ran.bounds if b.constraint not in kept]


def _disproved(constraint: str, samples: list[Sample]) -> bool:
    """``seq >= 3`` is false when forward ran at a smaller seq."""
    axis, op, value = constraint.partition(" >= ")[0], " >= " in constraint, constraint.rpartition(" ")[2]
    if not op or not value.isdigit():
        return False
    return any(s.eager_ran and s.sizes.get(axis, int(value)) < int(value) for s in samples)


def _failed(module: nn.Module, plan: InputPlan, examples: dict, label: str, reason: str) -> ProofResult:
    """The result of an export that failed: the planned inputs and one problem, in axis names."""
    try:
        naming = name_symbols(plan, input_symbols(plan, examples))
    except ExportFailure:
        naming = Naming()
    where = ", ".join(f"{a}={EXAMPLE_SIZES[a]}" for a in plan.dynamic_axes)
    message = f"torch.export could not trace {type(module).__name__}.forward at {where}: {naming.text(reason)}"
    inputs = {arg.name: list(arg.axes) for arg in plan.arguments}
    return ProofResult(label, inputs, {}, [], [Problem("export", message)])


def _annotation_problems(module: nn.Module, exported: Exported, plan: InputPlan, naming: Naming) -> list[Problem]:
    """The return annotation against the symbolic output; else what @checked raised while tracing."""
    found = annotation_problems(module, naming, exported.input_shapes(plan), exported.output_shapes())
    if not found and exported.checked_error:
        lines = naming.text(exported.checked_error).splitlines()[:2]  # the diagnosis and expected/got
        found = ["@checked while tracing with symbolic sizes: " + "; ".join(line.strip() for line in lines)]
    return [Problem("annotation", message) for message in found]


def _finish(result: ProofResult, extra: list[str], seconds: float) -> ProofResult:
    constraints = result.constraints + [c for c in extra if c not in result.constraints]
    return replace(result, constraints=constraints, seconds=seconds)
