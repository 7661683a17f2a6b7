"""Measured values per module of any model: parameters (shared tensors once), FLOPs per mode, saved activations.

- forward: ``dispatch.count_flops`` (our formulas for every attention op), each op to the innermost module.
- train: the dispatch counter over forward + backward of ``training_loss`` (the sum of every floating-point
  output), each backward op to the module whose forward created its autograd node; activations are the
  tensors autograd saves for backward (``saved_tensors_hooks``), deduplicated by storage, parameters excluded.
- decode: one token (seq_q = 1) counted with the dispatch counter; the attention scores and values parts,
  counted against one key, are scaled to the ``keys`` a cache of that length gives (seq_q = 1: linear in keys).
"""

from __future__ import annotations

import contextlib
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from shapecheck.counting.dispatch import DispatchCount, FlopDispatchMode, _ModuleStack, count_flops
from shapecheck.counting.inputs import outputs, training_loss
from shapecheck.counting.repeats import count_with_repeats


def owners(module: nn.Module) -> dict[str, int]:
    """Parameters per owning module path, each tensor once (in the first module that holds it)."""
    seen: set[int] = set()
    counts: dict[str, int] = defaultdict(int)
    for path, sub in module.named_modules():
        for param in sub.parameters(recurse=False):
            if id(param) not in seen:
                seen.add(id(param))
                counts[path] += param.numel()
    return dict(counts)


def unique_numel(module: nn.Module) -> int:
    """Parameters of ``module``'s subtree, each tensor once."""
    return sum(p.numel() for p in {id(p): p for p in module.parameters()}.values())


def subtree(per_module: dict[str, int], path: str) -> int:
    """The sum over ``path`` and every module under it."""
    if not path:
        return sum(per_module.values())
    prefix = path + "."
    return sum(v for p, v in per_module.items() if p == path or p.startswith(prefix))


@dataclass
class Measured:
    flops: dict[str, int]  # module path -> FLOPs of the ops it ran itself (forward/decode) or its subtree (train)
    subtree_flops: bool  # True when ``flops`` already holds subtree totals
    uncounted: list[dict[str, Any]] = field(default_factory=list)
    activations: Optional[int] = None  # bytes saved for backward (train only)
    kernel: Optional[str] = None  # the attention kernel the training step ran (train only; "eager": no SDPA call)
    output_numel: int = 0  # elements of the largest floating-point output (train only: the logits of a LM)
    peak: Optional[int] = None  # most bytes live at once over forward + backward, weights excluded (train only)

    def at(self, path: str) -> int:
        if self.subtree_flops:
            if path in self.flops:
                return self.flops[path]
            prefix = path + "."  # a container that never runs (ModuleList): the sum of its children
            return sum(v for p, v in self.flops.items() if p.startswith(prefix) and "." not in p[len(prefix):])
        return subtree(self.flops, path)


def _innermost(count: DispatchCount, scale: Callable[[Any], int]) -> dict[str, int]:
    flops: dict[str, int] = defaultdict(int)
    for record in count.records:
        flops[record.module] += record.flops * scale(record)
    return dict(flops)


def _count(run: Callable[[], Any], module: nn.Module, attention_paths: Iterable[str], repeats: bool) -> DispatchCount:
    """On meta, layers proven identical are counted once and their records copied (``repeats``).

    Not with experts: a ModuleList of experts is no stack of layers (each token visits k of them, not all).
    """
    with torch.no_grad():
        if repeats and next(module.parameters(), torch.empty(0)).device.type == "meta":
            return count_with_repeats(run, module, list(attention_paths))[0]
        return count_flops(run, module, attention_paths)


def forward(module: nn.Module, run: Callable[[], Any], attention_paths: Iterable[str] = (), repeats: bool = True) -> Measured:
    count = _count(run, module, attention_paths, repeats)
    return Measured(_innermost(count, lambda _: 1), False, count.uncounted_list())


def decode(module: nn.Module, run_one: Callable[[], Any], attention_paths: dict[str, int], repeats: bool = True) -> Measured:
    """``run_one`` runs one token; ``attention_paths`` maps each attention module to the keys it attends to."""
    count = _count(run_one, module, attention_paths, repeats)
    scale = lambda r: attention_paths.get(r.module, 1) if r.part in ("scores", "av") else 1  # noqa: E731
    return Measured(_innermost(count, scale), False, count.uncounted_list())


class _Saved:
    """Bytes of the distinct storages autograd saves for backward, parameters excluded.

    Storages are told apart by identity and held weakly (a storage object lives as long as its memory), so
    backward frees what it would free without this count, and ``_Live`` sees the same frees as a real step.
    """

    def __init__(self, module: nn.Module) -> None:
        self.params = {p.untyped_storage()._cdata for p in module.parameters()}
        self.seen: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self.bytes = 0

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage._cdata not in self.params and storage not in self.seen:
            self.seen.add(storage)
            self.bytes += storage.nbytes()
        return tensor


class _Live(TorchDispatchMode):
    """The most bytes that the storages an op made hold at once, over forward, loss and backward: activations,
    the transients of each op, the loss's float copies and the gradients, each freed when torch frees it."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self.live = self.peak = 0

    def _free(self, nbytes: int) -> None:
        self.live -= nbytes

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for tensor in tree_leaves(out):
            if isinstance(tensor, torch.Tensor):
                storage = tensor.untyped_storage()
                if storage not in self.seen:
                    self.seen.add(storage)
                    nbytes = storage.nbytes()
                    self.live += nbytes
                    weakref.finalize(storage, self._free, nbytes)
        self.peak = max(self.peak, self.live)
        return out


def _under(mode: Optional[Any], function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` run inside the torch function ``mode`` (entered only where it is not active already:
    the backward pass, where a checkpoint recomputes, does not carry the forward's function modes)."""
    from torch.overrides import _get_current_function_mode_stack

    def run(*args: Any, **kwargs: Any) -> Any:
        if mode is None or any(m is mode for m in _get_current_function_mode_stack()):
            return function(*args, **kwargs)
        with mode:
            return function(*args, **kwargs)

    return run


@contextlib.contextmanager
def recomputed(layers: Iterable[nn.Module], mode: Optional[Any] = None) -> Iterator[None]:
    """Each of ``layers`` runs under ``torch.utils.checkpoint`` (full activation recomputation) while inside,
    its forward and its recomputation inside the torch function ``mode`` when given."""
    from torch.utils.checkpoint import checkpoint

    layers = list(layers)
    for layer in layers:
        plain = _under(mode, layer.forward)
        layer.forward = lambda *a, _plain=plain, **k: checkpoint(_plain, *a, use_reentrant=False, **k)
    try:
        yield
    finally:
        for layer in layers:
            del layer.forward


def train(module: nn.Module, run: Callable[[], Any], recompute: Iterable[nn.Module] = (), device: str = "cpu",
          kernel: Optional[str] = None) -> Measured:
    """Forward + backward; ``recompute``: layers checkpointed, so their forward runs again in backward.

    Each backward op is counted at the module whose forward created the autograd node it runs for
    (``dispatch._ModuleStack``), so a row holds its own backward and nothing of the layers before it.
    SDPA calls run the kernel torch picks on ``device`` (or ``kernel``), so the saved activations are that
    kernel's (``kernels.Routed``).
    """
    from shapecheck.counting.kernels import Routed

    saved = _Saved(module)
    routed = Routed(device, kernel)
    live = _Live()
    with _ModuleStack(module) as modules, FlopDispatchMode(modules, fast_meta=False) as mode, \
            recomputed(recompute, routed), live:  # a recomputed layer calls the same kernel again
        with torch.autograd.graph.saved_tensors_hooks(saved.pack, lambda t: t), routed:
            out = run()
        largest = max((t.numel() for t in outputs(out)), default=0)
        training_loss(out).backward()
        del out
    return Measured(_innermost(mode.count, lambda _: 1), False, [], saved.bytes, routed.kernel(), largest, live.peak)
