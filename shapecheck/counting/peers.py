"""Cross-checks by other counters, in their own conventions.

``fvcore_macs(module, inputs)``: fvcore's ``FlopCountAnalysis`` by module path
(each module's count includes its children). fvcore counts one multiply-add as
one "flop", i.e. it reports MACs; it traces with ``torch.jit`` and has no
handle for ``aten::scaled_dot_product_attention``, so attention computed
through SDPA counts 0 there. Returns the counts, or a short reason when fvcore
is missing or cannot trace the module.
"""

from __future__ import annotations

import warnings
from typing import Any, Union

from torch import nn


def fvcore_macs(module: nn.Module, inputs: tuple) -> Union[dict[str, int], str]:
    """Module path -> fvcore's count (MACs, children included), or why there is none."""
    try:
        from fvcore.nn import FlopCountAnalysis
    except ImportError:
        return "fvcore is not installed"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            analysis = FlopCountAnalysis(module, inputs)
            analysis.unsupported_ops_warnings(False)
            analysis.uncalled_modules_warnings(False)
            return {path: int(n) for path, n in analysis.by_module().items()}
    except Exception as error:  # noqa: BLE001 - a peer failing must not fail the report
        return f"fvcore could not trace the model: {type(error).__name__}: {str(error).splitlines()[0][:120]}"


def own_count(counts: dict[str, int], root: nn.Module, path: str) -> int:
    """A module's count minus its direct children's: the products it runs itself."""
    module: Any = root.get_submodule(path) if path else root
    children = sum(counts.get(f"{path}.{name}" if path else name, 0) for name, _ in module.named_children())
    return counts.get(path, 0) - children
