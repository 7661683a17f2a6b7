"""Export ``forward`` with dynamic batch and sequence axes (non-strict, so ``@checked`` runs on symbols).

``@checked`` compares symbolic sizes while export traces, so a wrong annotation
on any checked function stops the export with a ``ShapeError``. That error is
kept, and the module is exported again with checks off to still get its shapes.
"""

from __future__ import annotations

import inspect
import time
import warnings
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor, nn
from torch.utils import _pytree as pytree

from shapecheck.runtime import checks_disabled
from shapecheck.errors import ShapeError
from shapecheck.prove.inputs import InputPlan


class ExportFailure(Exception):
    """torch.export could not trace the module at the example sizes."""


@dataclass(frozen=True)
class Exported:
    program: torch.export.ExportedProgram
    checked_error: Optional[str]  # a ShapeError @checked raised on symbolic shapes, if any
    seconds: float

    def input_shapes(self, plan: InputPlan) -> dict[str, tuple]:
        """Each planned argument's symbolic shape, from the program's placeholders."""
        nodes = {n.name: n for n in self.program.graph.nodes if n.op == "placeholder"}
        names = [s.arg.name for s in self.program.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
        return {arg.name: tuple(nodes[name].meta["val"].shape) for arg, name in zip(plan.arguments, names)}

    def output_shapes(self) -> dict[str, tuple]:
        """Each returned tensor's symbolic shape, labelled by where it sits in the output."""
        nodes = {n.name: n for n in self.program.graph.nodes}
        specs = [s for s in self.program.graph_signature.output_specs if s.kind.name == "USER_OUTPUT"]
        labels = output_labels(self.program.call_spec.out_spec, len(specs))
        shapes: dict[str, tuple] = {}
        for label, spec in zip(labels, specs):
            value = nodes[spec.arg.name].meta.get("val") if hasattr(spec.arg, "name") and spec.arg.name in nodes else None
            if isinstance(value, Tensor):
                shapes[label] = tuple(value.shape)
        return shapes


def output_labels(out_spec: object, count: int) -> list[str]:
    """``['output']`` for one tensor; field names or indices for tuples, named tuples, dicts."""
    if out_spec is None:
        return [f"output[{i}]" for i in range(count)] if count != 1 else ["output"]
    leaves = pytree.tree_unflatten(list(range(out_spec.num_leaves)), out_spec)  # type: ignore[attr-defined]
    paths = [path for path, _ in pytree.tree_flatten_with_path(leaves)[0]]
    return [_label(path) for path in paths] or ["output"]


def _label(path: tuple) -> str:
    label = "output"
    for key in path:
        name = getattr(key, "name", None) or getattr(key, "key", None)
        if name is not None:
            label = str(name) if label == "output" else f"{label}.{name}"
        else:
            label += f"[{getattr(key, 'idx', key)}]"
    return label


def export_module(module: nn.Module, plan: InputPlan, examples: dict[str, Tensor]) -> Exported:
    """Export ``module`` non-strict on ``examples``; raises ``ExportFailure`` with a one-line reason."""
    start = time.perf_counter()
    try:
        program, checked_error = _export(module, plan, examples), None
    except ShapeError as error:
        checked_error = str(error)
        with checks_disabled():
            try:
                program = _export(module, plan, examples)
            except ShapeError as again:  # raised by the module's own code, not by @checked
                raise ExportFailure(first_line(again)) from None
    return Exported(program, checked_error, time.perf_counter() - start)


def _export(module: nn.Module, plan: InputPlan, examples: dict[str, Tensor]) -> torch.export.ExportedProgram:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.export.export(module, (), examples, dynamic_shapes=plan.dynamic_shapes(), strict=False)
    except ShapeError:
        raise
    except Exception as error:  # noqa: BLE001 - any failure inside user code or the tracer
        raise ExportFailure(first_line(error)) from None


def input_symbols(plan: InputPlan, examples: dict[str, Tensor]) -> dict[str, tuple]:
    """The symbolic input shapes export gives these arguments, from a trivial module with the same signature.

    Export names a size symbol after the argument and axis it comes from, so the
    symbols in a failed export's message are the ones this stand-in gets.
    """
    parameter = inspect.Parameter

    def forward(self: nn.Module, **kwargs: Tensor) -> Tensor:
        return sum(value.sum() for value in kwargs.values())  # type: ignore[return-value]

    signature = [parameter("self", parameter.POSITIONAL_OR_KEYWORD)]
    signature += [parameter(arg.name, parameter.KEYWORD_ONLY) for arg in plan.arguments]
    forward.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]
    stand_in = type("StandIn", (nn.Module,), {"forward": forward})()
    return Exported(_export(stand_in, plan, examples), None, 0.0).input_shapes(plan)


def first_line(error: BaseException) -> str:
    """``TypeName: first line of the message`` (export's messages run to pages)."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
