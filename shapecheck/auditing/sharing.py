"""Shared and tied parameters: one tensor under several names (tied embeddings, cross-layer sharing).

``nn.Module.parameters()`` yields a shared tensor once; ``named_parameters(remove_duplicate=False)``
yields every name it is reachable by. A submodule reachable by several paths
(ALBERT-style cross-layer sharing) is reported once as a module group; a single
tied tensor (embedding ↔ pre-softmax weights, Press & Wolf 2017) as a parameter group.
"""

from __future__ import annotations

from collections import defaultdict

from torch import nn

from shapecheck.auditing.result import SharedGroup


def _module_groups(model: nn.Module) -> list[SharedGroup]:
    paths: dict[int, list[str]] = defaultdict(list)
    modules: dict[int, nn.Module] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        paths[id(module)].append(name)
        modules[id(module)] = module
    groups = [(key, names) for key, names in paths.items() if len(names) > 1 and any(True for _ in modules[key].parameters())]
    shared_paths = {name for _, names in groups for name in names}
    top = [(key, names) for key, names in groups if not any(_under(n, shared_paths - {n}) for n in names)]
    return [SharedGroup(tuple(names), sum(p.numel() for p in modules[key].parameters()), module=True) for key, names in top]


def _under(name: str, prefixes: set[str]) -> bool:
    return any(name.startswith(prefix + ".") for prefix in prefixes if prefix)


def _param_groups(model: nn.Module, module_paths: set[str]) -> list[SharedGroup]:
    names: dict[int, list[str]] = defaultdict(list)
    sizes: dict[int, int] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names[id(param)].append(name)
        sizes[id(param)] = param.numel()
    groups = []
    for key, found in names.items():
        outside = [n for n in found if not _under(n, module_paths)]
        inside = [n for n in found if n not in outside]
        kept = tuple(inside[:1] + outside)  # one name inside a shared module stands for all its paths
        if outside and len(kept) > 1:
            groups.append(SharedGroup(kept, sizes[key]))
    return groups


def shared_groups(model: nn.Module) -> tuple[SharedGroup, ...]:
    """Module groups first (cross-layer sharing), then tied parameters outside them."""
    modules = _module_groups(model)
    module_paths = {name for group in modules for name in group.names}
    return tuple(modules + _param_groups(model, module_paths))


def named_count(model: nn.Module) -> int:
    """Parameters counted once per name (what a naive sum over a state dict gives)."""
    return sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
