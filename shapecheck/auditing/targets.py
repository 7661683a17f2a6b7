"""Audit what the command line names: a ``file.py:Name`` target or a released preset.

A target is built with its constructor's own defaults first (``map_arguments(...,
keep_defaults=True)``): ``--d-model`` and ``--heads`` replace a default only when
given, and a replaced default shows in the description (``dim=256 (default 512)``).
It is counted on the meta device (on the CPU, when small, if its constructor cannot run
there). Dead parameters are found on a small probe of the same class
(``probe_sizes``), built the same way; when it cannot be built the verdict says
liveness was not checked and why.

A preset (``--preset bert-base``) is the catalogue's model on the meta device, with a
small real instance (layer count kept, widths shrunk) as its probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Optional

from torch import nn

from shapecheck.auditing.api import audit
from shapecheck.auditing.result import AuditResult, Liveness
from shapecheck.catalog import build_on_meta, build_real, preset_sizes
from shapecheck.convention import head_constraints
from shapecheck.errors import UsageError
from shapecheck.target import Construction, Target, build, construct_on_meta_or_cpu, load_target, map_arguments

DEFAULT_SIZES = {"d_model": 512, "heads": 8}  # for required parameters only; defaults are kept
PROBE_SIZES = {"d_model": 16, "heads": 2}
Progress = Callable[[str], None]


def _explicit(sizes: dict[str, Optional[int]]) -> tuple[dict[str, int], tuple[str, ...]]:
    given = {k: v for k, v in sizes.items() if v is not None}
    return {**DEFAULT_SIZES, **given}, tuple(given)


def _build(target: Target, sizes: dict[str, Optional[int]], init: dict[str, Any]) -> tuple[nn.Module, Construction]:
    full, explicit = _explicit(sizes)
    construction = map_arguments(target, full, keep_defaults=True, init=init, explicit=explicit)
    return construct_on_meta_or_cpu(target, construction)[0], construction


def _probe(target: Target, sizes: dict[str, int], init: dict[str, Any]) -> tuple[Optional[nn.Module], str]:
    try:
        module, construction = build(target, sizes, keep_defaults=True, init=init, explicit=tuple(sizes))
    except UsageError as error:
        return None, f"not run: the small probe could not be built ({error})"
    return module, f"a small probe {construction.describe()}"


def audit_target(spec: str, *, d_model: Optional[int] = None, heads: Optional[int] = None, init: Optional[dict[str, Any]] = None,
                 probe_sizes: Optional[dict[str, int]] = None, liveness: bool = True,
                 progress: Optional[Progress] = None) -> AuditResult:
    """Audit ``spec`` built with its own defaults (``d_model``/``heads`` replace them when given)."""
    say = progress or (lambda text: None)
    target, init = load_target(spec), dict(init or {})
    say(f"building {target.name} on the meta device")
    model, construction = _build(target, {"d_model": d_model, "heads": heads}, dict(init))
    probe, described = (None, "not run: --no-liveness")
    if liveness:
        say("building a small probe for the dead-parameter pass")
        probe, described = _probe(target, probe_sizes or PROBE_SIZES, dict(init))
        if probe is not None:
            say(f"forward/backward on {described}")
    result = audit(model, probe=probe, name=f"{spec}: {construction.describe()}")
    return _with_probe_note(_with_heads(result, target, init), probe, described)


def _with_heads(result: AuditResult, target: Target, init: dict[str, Any]) -> AuditResult:
    """The head counts ``target`` accepts in the convention (not probed after Ctrl-C stopped the liveness pass)."""
    if result.interrupted:
        return result
    heads = head_constraints(target, init=dict(init), keep_defaults=True)
    return replace(result, convention={**result.convention, "heads": heads.as_json()},
                   notes=result.notes + tuple(n for n in (heads.note(),) if n))


def _with_probe_note(result: AuditResult, probe: Optional[nn.Module], described: str) -> AuditResult:
    if probe is None:
        return replace(result, liveness=Liveness(False, described))
    detail = result.liveness.detail.replace(f"a small {type(probe).__name__}", described, 1)
    return replace(result, liveness=replace(result.liveness, detail=detail))


def audit_preset(name: str, *, d_model: Optional[int] = None, heads: Optional[int] = None, liveness: bool = True,
                 progress: Optional[Progress] = None) -> AuditResult:
    """Audit the catalogue's preset ``name`` (its sizes, or ``d_model``/``heads`` instead)."""
    sizes = preset_sizes(name, d_model=d_model, heads=heads)
    model = build_on_meta(name, sizes)
    label = f"{type(model).__name__} ({name}: d_model={sizes.d_model}, heads={sizes.heads}, layers={sizes.layers})"
    if not liveness:
        return _with_probe_note(audit(model, name=label), None, "not run: --no-liveness")
    (progress or (lambda text: None))("forward/backward on a small probe")
    return audit(model, probe=build_real(name, preset_sizes(name, probe=True), command="audit"), name=label)
