"""Test the proof by running it: bounds confirmed at N and N + 1, samples at both ends of every range.

``check`` returns what ran and what did not: the samples (``low`` at 1, ``two``
below a claimed lower bound, ``middle``, ``top`` at a found bound or the cap,
``past`` one beyond a found bound), the bounds confirmed, and a line for each
check that could not run (weights on the meta device, ``samples=0``, Ctrl-C).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Optional

from torch import nn

from shapecheck.prove.bounds import Bound, candidates, confirm, sequence_axes, traced
from shapecheck.prove.constraints import bounds as range_bounds
from shapecheck.prove.export import Exported
from shapecheck.prove.inputs import InputPlan
from shapecheck.prove.sampling import DEFAULT_CAPS, Sample, choose_sizes, eager_error, run_program, run_sample, spans
from shapecheck.prove.symbols import Naming

Progress = Callable[[str], None]


@dataclass
class Checked:
    samples: list[Sample] = field(default_factory=list)
    bounds: list[Bound] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    interrupted: bool = False


PAST_TABLE_LIMIT = 8192  # sampling goes one past a position table up to this length (a larger one: the cap)


def _exported_upper(exported: Exported, naming: Naming, axis: str) -> Optional[int]:
    symbol = naming.symbol_of(axis)
    ranges = exported.program.range_constraints
    return range_bounds(ranges[symbol])[1] if symbol in ranges else None


def _find_bounds(module: nn.Module, program: nn.Module, exported: Exported, plan: InputPlan, naming: Naming,
                 free: list[str], progress: Progress, runs: dict[tuple, Sample], largest: dict[str, int]) -> list[Bound]:
    """Each sequence axis's confirmed bound; the runs at the top are kept in ``runs`` (the top sample reuses them);
    ``largest`` gets the largest position table, buffer or built position tensor of each axis."""
    found = []
    base = {a: 1 for a in free}
    for axis in sequence_axes(plan, free):
        built = traced(lambda n, axis=axis: module(**plan.call(plan.examples({**base, axis: n}))))
        largest[axis] = max((c.size for c in candidates(module, None, built)), default=0)
        options = candidates(module, _exported_upper(exported, naming, axis), built)
        if options:
            progress(f"confirming the bound on {axis} ({', '.join(str(c.size) for c in options[:3])} ...)")

        def at(sizes: dict[str, int]) -> Optional[str]:
            key = tuple(sorted(sizes.items()))
            runs[key] = runs.get(key) or _at_top(module, program, plan, naming, exported, sizes, "top")
            return runs[key].problem

        bound = confirm(axis, options, base, at, lambda sizes: eager_error(module, plan, sizes))
        if bound is not None:
            found.append(bound)
    return found


def unconfirmed_tables(module: nn.Module) -> list[str]:
    """Position tables and masks that would bound a sequence axis, named for the 'not checked' line."""
    return list(dict.fromkeys(c.source for c in candidates(module, None)))


def check(module: nn.Module, exported: Exported, plan: InputPlan, naming: Naming, *, count: int, caps: Optional[dict[str, int]],
          seed: int, progress: Progress) -> Checked:
    """Bounds, then samples; Ctrl-C keeps what finished and says so."""
    result = Checked()
    if plan.device.type == "meta":
        tables = unconfirmed_tables(module)
        result.unchecked.append("no size was run: the weights are on the meta device" +
                                (f" (not confirmed as bounds: {'; '.join(tables)})" if tables else ""))
        return result
    if count <= 0:
        result.unchecked.append("no size was run (samples=0)")
        return result
    program, outputs = exported.program.module(), exported.output_shapes()
    ranges = spans(plan, naming, exported.program.range_constraints, caps)
    try:
        runs: dict[tuple, Sample] = {}  # the top runs of the bound search, by sizes
        largest: dict[str, int] = {}
        result.bounds = _find_bounds(module, program, exported, plan, naming, list(ranges), progress, runs, largest)
        tops = {b.axis: b.size for b in result.bounds}
        ranges = {a: (low, min(high, tops.get(a, high))) for a, (low, high) in ranges.items()}
        for axis, size in largest.items():  # no bound confirmed: the top sample goes one past the largest table
            upper = _exported_upper(exported, naming, axis)
            if axis not in tops and ranges[axis][1] <= size < PAST_TABLE_LIMIT:
                ranges[axis] = (ranges[axis][0], size + 1 if upper is None else min(size + 1, upper))
        for number, (kind, sizes) in enumerate(choose_sizes(ranges, tops, naming, count=count, seed=seed, caps=caps), 1):
            progress(f"sample {number}: " + ", ".join(f"{k}={v}" for k, v in sizes.items()))
            past_cap = any(sizes.get(a, 0) > (caps or {}).get(a, DEFAULT_CAPS.get(a, 32)) for a in tops)
            if past_cap:  # a bound above the cap: the program alone (eager is not run twice at a large size)
                done = runs.get(tuple(sorted(sizes.items())))
                result.samples.append(done or _at_top(module, program, plan, naming, exported, sizes, kind))
            else:
                result.samples.append(run_sample(module, program, plan, naming, outputs, sizes, kind))
        result.samples += [_past(b, ranges) for b in result.bounds]
    except KeyboardInterrupt:
        result.interrupted = True
        result.unchecked.append("interrupted (Ctrl-C): the samples after the last one shown did not run")
    return result


def _at_top(module: nn.Module, program: nn.Module, plan: InputPlan, naming: Naming, exported: Exported,
            sizes: dict[str, int], kind: str) -> Sample:
    """The program alone at a large size; where one of export's guards refuses it, forward decides (the code runs there)."""
    sample = run_program(program, plan, naming, exported.output_shapes(), sizes, kind)
    if sample.problem and "Guard failed" in sample.problem and eager_error(module, plan, sizes) is None:
        guard = sample.problem.rpartition("Guard failed: ")[2]
        return Sample(sizes, None, kind, f"forward runs; the exported program's guard {guard} refuses this size", eager_ran=True)
    return sample


def _past(bound: Bound, ranges: dict[str, tuple[int, int]]) -> Sample:
    sizes = {a: 1 for a in ranges} | {bound.axis: bound.size + 1}
    return Sample(sizes, None, "past", f"forward fails one past the bound, as it should: {bound.failure}")
