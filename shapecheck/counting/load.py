"""The model a report is about: a target (``file.py:Name``, ``package.module:Name``) or a transformers config, on meta.

A target's calling convention is probed on a small CPU instance of its class (``shapecheck.convention``).
"""

from __future__ import annotations

from typing import Any, Optional

from torch import nn

from shapecheck.counting import hf
from shapecheck.errors import UsageError


def load_model(target: Optional[str], config: Optional[str], *, init: Optional[dict[str, Any]] = None,
               sizes: Optional[dict[str, int]] = None) -> tuple[nn.Module, str]:
    """The module built on the meta device and a label for it; every failure is one ``UsageError`` line."""
    if init and (target is None or config is not None):
        raise UsageError("--init sets a TARGET's constructor arguments; a config file or preset fixes its own")
    if target and target.startswith(hf.PREFIX) and config is not None:
        return hf.build(config, target[len(hf.PREFIX):] or None)
    if target is None:
        if config is None:
            raise UsageError("give a TARGET (file.py:Name or package.module:Name), --config FILE, or --model/--preset")
        return hf.build(config)
    if config is not None:
        raise UsageError(f"--config applies to transformers models; {target} is built from its own constructor")
    # transformers:ClassName without --config is a TARGET like any other: its config from --init (audit, prove)
    from shapecheck.target import construct_on_meta_or_cpu, load_target, map_arguments

    loaded = load_target(target)
    given = {k: v for k, v in (sizes or {}).items() if v is not None}
    construction = map_arguments(loaded, given, keep_defaults=True, init=init or {}, explicit=tuple(given))
    label = f"{target}: {construction.describe()}"
    module, on_cpu = construct_on_meta_or_cpu(loaded, construction)
    _decide_on_twin(module, loaded, init or {}, on_cpu)
    from shapecheck.convention import HIDDEN, first_input, head_constraints, with_heads

    if first_input(module) == HIDDEN:  # a block: the head counts it accepts, as verify, prove and audit find them
        with_heads(module, head_constraints(loaded, init=init or {}, keep_defaults=True))
    return module, f"{label} (built on the CPU: it fails on meta)" if on_cpu else label


def _decide_on_twin(module: nn.Module, loaded: Any, init: dict[str, Any], on_cpu: bool) -> None:
    """How to call ``module``, probed on a small CPU instance of its class (or on itself when it was built on the CPU)."""
    from shapecheck.convention import HIDDEN, PROBE_SIZES, decide, first_input, undecided
    from shapecheck.target import build

    if on_cpu or first_input(module) != HIDDEN:
        decide(module)
        return
    try:
        twin, _ = build(loaded, dict(PROBE_SIZES), keep_defaults=True, init=init, explicit=tuple(PROBE_SIZES))
    except UsageError as error:
        undecided(module, f"the small instance to probe could not be built: {error}")
        return
    decide(module, twin=twin)
