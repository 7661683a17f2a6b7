"""Prove what the command line names: a ``file.py:Name`` target built with its own defaults, or a catalogue preset.

A target's constructor keeps its defaults unless ``d_model``/``heads`` are given
(``map_arguments(..., keep_defaults=True)``); the sizes the module was really
built with (defaults included) size the static axes of its inputs, and the
description shows any replaced default (``dim=256 (default 512)``).
"""

from __future__ import annotations

import inspect
from typing import Any, Optional

from torch import nn

from shapecheck.catalog import REAL_BUDGET, build_real, preset_sizes, require_small
from shapecheck.convention import head_constraints, with_heads
from shapecheck.errors import UsageError
from shapecheck.prove.result import ProofResult
from shapecheck.target import (
    Construction, Target, construct, construct_on_meta_or_cpu, factory_for, infer_roles, load_target, map_arguments,
)

DEFAULT_SIZES = {"d_model": 512, "heads": 8}  # for required parameters only; defaults are kept
SIZE_ROLES = ("d_model", "heads")


def built_sizes(target: Target, construction: Construction) -> dict[str, int]:
    """d_model and heads as built: the value passed, else the parameter's default."""
    function = target.obj.__init__ if target.is_class else target.obj
    try:
        fields = [(p.name, p.default) for p in inspect.signature(function).parameters.values() if p.name != "self"]
    except (TypeError, ValueError):
        return {}
    found: dict[str, int] = {}
    for name, role in infer_roles(fields).items():
        value = construction.arguments.get(name, dict(fields).get(name))
        if role in SIZE_ROLES and isinstance(value, int) and not isinstance(value, bool):
            found.setdefault(role, value)
    return found


def prove_target(spec: str, *, d_model: Optional[int] = None, heads: Optional[int] = None,
                 init: Optional[dict[str, Any]] = None, **options: Any) -> ProofResult:
    """Build ``spec`` (its defaults first) and prove it; ``options`` are ``prove_module``'s."""
    from shapecheck.prove import prove_module

    target, init = load_target(spec), dict(init or {})
    given = {k: v for k, v in (("d_model", d_model), ("heads", heads)) if v is not None}
    construction = map_arguments(target, {**DEFAULT_SIZES, **given}, keep_defaults=True, init=init, explicit=tuple(given))
    module = _small_enough(spec, target, construction)
    with_heads(module, head_constraints(target, init=init, keep_defaults=True))
    sizes = {**built_sizes(target, construction), **dict(options.pop("sizes", None) or {})}
    rebuild = factory_for(target, init=init, keep_defaults=True)
    label = spec if not construction.replaced else f"{spec}: {construction.describe()}"
    return prove_module(module, target=label, sizes=sizes, rebuild=rebuild, **options)


def _small_enough(spec: str, target: Target, construction: Construction) -> nn.Module:
    """The module on the CPU, counted on meta first (``construct_on_meta_or_cpu``): a target above
    ``catalog.REAL_BUDGET`` parameters is refused before any weight exists. A constructor that cannot run on meta is
    built on the CPU directly, stopped once its tensors pass that budget (the meta failure is then what is reported)."""
    module, on_cpu = construct_on_meta_or_cpu(target, construction, budget=REAL_BUDGET)
    if on_cpu:
        return module
    require_small(module, f"prove {spec}", f"give smaller sizes (--d-model, --heads, --init), "
                                           f"or count it on meta with `shapecheck report {spec}`")
    return construct(target, construction, "cpu")


def prove_preset(name: str, *, d_model: Optional[int] = None, heads: Optional[int] = None, **options: Any) -> ProofResult:
    """Prove the catalogue's preset ``name`` at its own sizes (refused above ``catalog.REAL_BUDGET`` parameters)."""
    from shapecheck.prove import prove_module

    if d_model is not None or heads is not None:
        raise UsageError(f"--preset {name} alone fixes its sizes; give a TARGET to build other sizes")
    sizes = preset_sizes(name)
    module = build_real(name, sizes, command="prove")
    static = {"d_model": sizes.d_model, "heads": sizes.heads, **dict(options.pop("sizes", None) or {})}
    return prove_module(module, target=name, sizes=static, **options)
