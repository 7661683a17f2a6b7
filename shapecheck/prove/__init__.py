"""``prove``: output shapes and constraints for every batch and sequence size at once.

    >>> result = prove(MultiHeadAttention(16, 2))
    >>> result.output_shape, result.constraints, result.ok
    (['batch', 'seq', 16], ['d_model % heads == 0'], True)

The module is exported with ``torch.export`` (non-strict, so ``@checked`` checks
the annotations on symbolic shapes while it traces) with ``batch`` and the
sequence axes dynamic. The program's size symbols are named after the axes;
its ranges, equalities, specialisations and assertions become constraints; the
return annotation is compared with the symbolic output shape; and the program
is run at sampled sizes next to eager ``forward`` to catch silent specialisation.
"""

from __future__ import annotations

import time
from typing import Optional, Union

import torch
from torch import nn

from shapecheck.prove.annotations import annotation_problems
from shapecheck.prove.constraints import all_constraints
from shapecheck.prove.export import Exported, ExportFailure, export_module, input_symbols
from shapecheck.prove.inputs import EVEN_SIZES, EXAMPLE_SIZES, InputPlan, plan_inputs
from shapecheck.prove.probe import Rebuild, divisibility_constraints
from shapecheck.prove.result import Problem, ProofResult
from shapecheck.prove.sampling import DEFAULT_CAPS, Sample, choose_sizes, run_sample
from shapecheck.prove.symbols import Naming, name_symbols

__all__ = ["DEFAULT_CAPS", "Problem", "ProofResult", "Sample", "prove", "prove_module"]


def prove(
    module_or_target: Union[nn.Module, str],
    *,
    d_model: int = 512,
    heads: int = 8,
    init: Optional[dict[str, object]] = None,
    **options: object,
) -> ProofResult:
    """Prove a module instance, or a ``file.py:Name`` / ``pkg.mod:Name`` target built at ``d_model``/``heads``.

    ``options`` are those of ``prove_module``. Raises ``UsageError`` for a target
    that cannot be loaded or built, or arguments that cannot be sized.
    """
    if isinstance(module_or_target, nn.Module):
        return prove_module(module_or_target, **options)  # type: ignore[arg-type]
    from shapecheck.target import build, factory_for, load_target

    target = load_target(module_or_target)
    module, _ = build(target, {"d_model": d_model, "heads": heads}, keep_defaults=True, init=init, explicit=("d_model", "heads"))
    rebuild = factory_for(target, init=init, keep_defaults=True)
    sizes = {"d_model": d_model, "heads": heads, **dict(options.pop("sizes", None) or {})}  # type: ignore[arg-type]
    return prove_module(module, target=target.spec, rebuild=rebuild, sizes=sizes, **options)  # type: ignore[arg-type]


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
) -> ProofResult:
    """Export ``module`` with dynamic batch and sequence axes and report its symbolic shapes.

    ``inputs`` names the ``forward`` arguments to pass (default: the required ones,
    plus keys and values with ``cross=True``); ``sizes`` gives axis sizes the config
    does not (``{"d_in": 32}``); ``samples`` runs of the exported program check the
    proof, at sizes up to ``caps`` (default ``DEFAULT_CAPS``); ``rebuild(d_model,
    heads)`` lets the config's divisibility rule be probed.
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
            result = _prove(module, plan, label, samples, caps, seed)
    finally:
        module.train(was_training)
    extra = divisibility_constraints(module, rebuild=rebuild, d_model=static.get("d_model"), heads=static.get("heads"))
    return _finish(result, extra, time.perf_counter() - start)


def _export_at_examples(module: nn.Module, plan: InputPlan) -> Exported:
    """Export at odd example sizes, or, when those cannot be traced, at even ones."""
    try:
        return export_module(module, plan, plan.examples(EXAMPLE_SIZES))
    except ExportFailure as failure:
        try:
            return export_module(module, plan, plan.examples(EVEN_SIZES))
        except ExportFailure:
            raise failure from None


def _prove(module: nn.Module, plan: InputPlan, label: str, samples: int, caps: Optional[dict[str, int]], seed: int) -> ProofResult:
    try:
        exported = _export_at_examples(module, plan)
    except ExportFailure as failure:
        return _failed(module, plan, plan.examples(EXAMPLE_SIZES), label, str(failure))
    naming = name_symbols(plan, exported.input_shapes(plan))
    problems = _annotation_problems(module, exported, plan, naming)
    ran = _samples(module, exported, plan, naming, samples, caps, seed)
    problems += [Problem("sample", s.problem) for s in ran if s.problem]
    return ProofResult(
        label,
        {name: naming.shape(shape) for name, shape in exported.input_shapes(plan).items()},
        {name: naming.shape(shape) for name, shape in exported.output_shapes().items()},
        all_constraints(exported.program, naming),
        problems,
        ran,
        exported.seconds,
    )


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


def _samples(
    module: nn.Module, exported: Exported, plan: InputPlan, naming: Naming, count: int, caps: Optional[dict[str, int]], seed: int
) -> list[Sample]:
    if count <= 0 or plan.device.type == "meta":  # meta weights have no values to run
        return []
    program = exported.program.module()
    outputs = exported.output_shapes()
    chosen = choose_sizes(plan, naming, exported.program.range_constraints, count=count, seed=seed, caps=caps)
    return [run_sample(module, program, plan, naming, outputs, sizes) for sizes in chosen]


def _finish(result: ProofResult, extra: list[str], seconds: float) -> ProofResult:
    constraints = result.constraints + [c for c in extra if c not in result.constraints]
    return ProofResult(
        result.target, result.inputs, result.outputs, constraints, result.problems, result.samples,
        result.export_seconds, seconds,
    )
