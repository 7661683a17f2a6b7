"""Parameter counting on the meta device: real module structure, no weights allocated.

- ``on_meta(factory)`` builds a module under ``torch.device("meta")``: every
  parameter has its shape and dtype but no storage, so a 175B-parameter model
  costs milliseconds and a few megabytes.
- ``count_parameters(module)`` counts each parameter tensor once, however many
  names share it (tied embeddings, a shared pre-softmax projection).
- ``tied_parameters(module)`` lists the groups of names that share one tensor.
- ``assign_parameters(module, owners)`` gives every parameter tensor to the
  first owner path (in the order given) whose subtree holds one of its names,
  so rows of a report add up to the model's total with shared weights counted
  once; what no owner claims is returned as unassigned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

M = TypeVar("M", bound=nn.Module)


class _SkipInit(TorchDispatchMode):
    """In-place initialisers on meta tensors write no data: return the tensor without running them."""

    INIT_OPS = frozenset({"uniform_", "normal_", "zero_", "fill_", "ones_", "trunc_normal_", "constant_"})

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # never under torch.compile; keeps `import torch._dynamo` away

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        if func.overloadpacket.__name__ in self.INIT_OPS and args and getattr(args[0], "is_meta", False):
            return args[0]
        return func(*args, **(kwargs or {}))


def on_meta(factory: Callable[[], M]) -> M:
    """``factory()`` with every tensor it creates on the meta device (shapes only, no memory).

    Initialisers (``uniform_``, ``normal_``, ...) are skipped: on meta they have nothing to write.
    """
    with torch.device("meta"), _SkipInit():
        return factory()


def count_parameters(module: nn.Module) -> int:
    """Elements of the distinct parameter tensors of ``module`` (shared tensors once)."""
    return sum(p.numel() for p in module.parameters())


def tied_parameters(module: nn.Module) -> list[tuple[str, ...]]:
    """Groups of two or more parameter names bound to one tensor, e.g. ``("embed.weight", "generator.weight")``."""
    names: dict[int, list[str]] = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    return [tuple(group) for group in names.values() if len(group) > 1]


def _prefixes(name: str) -> list[str]:
    """"a.b.weight" -> ["a.b.weight", "a.b", "a", ""]: the paths whose subtree holds the name."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), -1, -1)]


@dataclass
class Assignment:
    """Parameter elements per owner path, and the names no owner claimed."""

    counts: dict[str, int] = field(default_factory=dict)
    unassigned: list[str] = field(default_factory=list)
    unassigned_count: int = 0


def assign_parameters(module: nn.Module, owners: Iterable[str]) -> Assignment:
    """Give each distinct parameter tensor to the first owner whose subtree has one of its names."""
    order = {}
    for path in owners:
        order.setdefault(path, len(order))
    paths = list(order)
    result = Assignment(counts={path: 0 for path in paths})
    groups: dict[int, list[str]] = {}
    tensors: dict[int, torch.Tensor] = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        groups.setdefault(id(param), []).append(name)
        tensors[id(param)] = param
    for key, group in groups.items():
        ranks = [order[p] for name in group for p in _prefixes(name) if p in order]
        if not ranks:
            result.unassigned.append(group[0])
            result.unassigned_count += tensors[key].numel()
        else:
            result.counts[paths[min(ranks)]] += tensors[key].numel()
    return result
