"""Export ``forward`` with dynamic batch and sequence axes (non-strict, so ``@checked`` runs on symbols).

``@checked`` compares symbolic sizes while export traces, so a wrong annotation
on any checked function stops the export with a ``ShapeError``. That error is
kept, and the module is exported again with checks off to still get its shapes.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import os
import re
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Optional

import torch
from torch import Tensor, nn
from torch.utils import _pytree as pytree

from shapecheck.runtime import checks_disabled
from shapecheck.errors import ShapeError, first_line
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


def register_caches(module: nn.Module) -> None:
    """transformers' KV-cache classes as pytree nodes (transformers' own exporter does this), so a cache output is flattened."""
    inner = next((m for m in module.modules() if type(m).__module__.startswith("transformers.")), None)
    if inner is None:
        return
    try:
        from transformers.exporters.exporter_dynamo import register_cache_pytrees_for_model
    except ImportError:  # an older transformers: use_cache=False is what keeps caches out of the output
        return
    with contextlib.suppress(Exception):
        register_cache_pytrees_for_model(inner)


def export_module(module: nn.Module, plan: InputPlan, examples: dict[str, Tensor]) -> Exported:
    """Export ``module`` non-strict on ``examples``; raises ``ExportFailure`` with a one-line reason."""
    register_caches(module)
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


# while it traces, torch logs graph dumps ("Unable to find user code corresponding to {u0}"), and on a
# failure it logs a hint and prints the partial graph to sys.stderr itself
_TRACER_LOGGERS = ("torch.fx.experimental.symbolic_shapes", "torch._dynamo", "torch.export", "torch._export")


@contextlib.contextmanager
def _quiet_tracer() -> Iterator[None]:
    """Python warnings, torch's tracer logs and its partial-graph print off: a failure is reported as one line."""
    loggers = [logging.getLogger(name) for name in _TRACER_LOGGERS]
    levels = [logger.level for logger in loggers]
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        for logger in loggers:
            logger.setLevel(logging.CRITICAL)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels):
                logger.setLevel(level)


def _export(module: nn.Module, plan: InputPlan, examples: dict[str, Tensor]) -> torch.export.ExportedProgram:
    try:
        with _quiet_tracer():
            return torch.export.export(module, (), plan.call(examples), dynamic_shapes=plan.dynamic_shapes(), strict=False)
    except ShapeError:
        raise
    except Exception as error:  # noqa: BLE001 - any failure inside user code or the tracer
        raise ExportFailure(export_reason(error)) from None


# export's messages end with the user's line: '  File "attn.py", line 11, in forward\n    if x.sum() > 0:'
_USER_LINE = re.compile(r'The following call raised this error:\s*\n\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in \w+\s*\n\s*(?P<code>[^\n]+)')


def export_reason(error: BaseException) -> str:
    """One line: what went wrong (data-dependent branches in plain words) and the user's line that did it."""
    if type(error).__name__ in ("GuardOnDataDependentSymNode", "UserError") and "data-dependent" in str(error):
        reason = "the code branches on tensor values (a data-dependent condition), which export cannot trace"
    else:
        reason = first_line(error)
    found = _USER_LINE.search(str(error))
    if found:
        reason += f" ({os.path.basename(found.group('file'))}:{found.group('line')}: {found.group('code').strip()})"
    return reason


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
    tensors_only = replace(plan, constants=())
    return Exported(_export(stand_in, tensors_only, examples), None, 0.0).input_shapes(plan)
