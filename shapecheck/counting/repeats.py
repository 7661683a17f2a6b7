"""Count one layer of a stack and reuse its count, only where the layers are provably identical.

On the meta device a forward pass cannot branch on tensor values, so the ops a
layer runs are fixed by its code, its non-tensor attributes (config, dropout
rate, training flag, ...), the shapes and dtypes of its parameters and buffers,
and the shapes of its inputs. ``identical_stacks(root)`` finds every
``nn.ModuleList`` whose layers agree on all of the first three (compared
submodule by submodule); ``count_with_repeats`` then runs layer 0 of each such
stack for real and the others as pass-throughs, checking at run time that
every layer receives inputs of the same shapes and that layer 0 returns its
input's shape. If any check fails it counts the whole model op by op instead.
Layer 0's records are then copied to layers 1..n-1 under their own paths.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from shapecheck.counting.dispatch import DispatchCount, OpRecord, count_flops


@dataclass(frozen=True)
class Stack:
    """An ``nn.ModuleList`` at ``path`` holding ``size`` layers proven identical, but for the integer
    attributes ``watched`` ((submodule path inside a layer, attribute name)), which must go unused."""

    path: str
    size: int
    watched: tuple[tuple[str, str], ...] = ()


def _describe(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype)
    return value


def signature(layer: nn.Module) -> list[tuple]:
    """Everything the ops of ``layer`` can depend on besides its input shapes, submodule by submodule."""
    rows = []
    for name, module in layer.named_modules():
        attrs = sorted((k, _describe(v)) for k, v in vars(module).items() if not k.startswith("_"))
        tensors = [(k, _describe(t)) for k, t in (*module._parameters.items(), *module._buffers.items())]
        rows.append((name, type(module), attrs, tensors))
    return rows


def identical_stacks(root: nn.Module) -> list[Stack]:
    """The ModuleLists of ``root`` with two or more layers of one signature (outermost first, none nested)."""
    stacks: list[Stack] = []
    for path, module in root.named_modules():
        if not isinstance(module, nn.ModuleList) or len(module) < 2:
            continue
        if any(path.startswith(s.path + ".") for s in stacks):
            continue
        first = signature(module[0])
        watched: set[tuple[str, str]] = set()
        for layer in module[1:]:
            differing = None if type(layer) is not type(module[0]) else _differing_integers(first, signature(layer))
            if differing is None:
                break
            watched |= differing
        else:
            stacks.append(Stack(path, len(module), tuple(sorted(watched))))
    return stacks


def _is_integer(value: Any) -> bool:
    return type(value) is int


def _differing_integers(first: list[tuple], other: list[tuple]) -> set[tuple[str, str]] | None:
    """The (submodule, attribute) pairs where two signatures hold different integers; None when they differ otherwise."""
    if len(first) != len(other):
        return None
    differing = set()
    for (name, kind, attrs, tensors), (name2, kind2, attrs2, tensors2) in zip(first, other):
        if (name, kind, tensors) != (name2, kind2, tensors2) or [k for k, _ in attrs] != [k for k, _ in attrs2]:
            return None
        for (key, value), (_, value2) in zip(attrs, attrs2):
            if value == value2 and type(value) is type(value2):
                continue
            if not (_is_integer(value) and _is_integer(value2)):
                return None
            differing.add((name, key))
    return differing


class _Watched(int):
    """An integer that tells ``flag`` whenever Python code uses it (a layer that reads its index)."""

    flag: "_Passthrough"

    def __new__(cls, value: int, flag: "_Passthrough") -> "_Watched":
        watched = super().__new__(cls, value)
        watched.flag = flag
        return watched


def _watching(name: str) -> Callable[..., Any]:
    def method(self: _Watched, *args: Any) -> Any:
        self.flag.ok = False
        return getattr(int, name)(self, *args)
    method.__name__ = name
    return method


for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__", "__index__", "__int__",
              "__float__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__divmod__", "__rdivmod__",
              "__pow__", "__rpow__", "__neg__", "__pos__", "__abs__", "__invert__", "__and__", "__rand__", "__or__",
              "__ror__", "__xor__", "__rxor__", "__lshift__", "__rlshift__", "__rshift__", "__rrshift__", "__round__",
              "__trunc__", "__floor__", "__ceil__", "__str__", "__repr__", "__format__", "__reduce__", "__reduce_ex__"):
    setattr(_Watched, _name, _watching(_name))


def _args_key(args: tuple, kwargs: dict) -> tuple:
    return tuple(_describe(a) for a in args), tuple(sorted((k, _describe(v)) for k, v in kwargs.items()))


class _Passthrough:
    """Layers 1..n-1 of a stack: return the input, after checking it looks like layer 0's."""

    def __init__(self) -> None:
        self.expected: Any = None
        self.ok = True

    def record(self, module: nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
        self.expected = _args_key(args, kwargs)
        if not isinstance(output, torch.Tensor) or not args or output.shape != getattr(args[0], "shape", None):
            self.ok = False  # layer 0 changes the shape: the others would not see what it saw

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _args_key(args, kwargs) != self.expected:
            self.ok = False
        return args[0]


@contextlib.contextmanager
def _stubbed(root: nn.Module, stacks: list[Stack]) -> Iterator[list[_Passthrough]]:
    stubs, handles, layers, originals = [], [], [], []
    for stack in stacks:
        module_list = root.get_submodule(stack.path)
        stub = _Passthrough()
        handles.append(module_list[0].register_forward_hook(stub.record, with_kwargs=True))
        for sub, attr in stack.watched:
            owner = module_list[0].get_submodule(sub)
            originals.append((owner, attr, vars(owner)[attr]))
            setattr(owner, attr, _Watched(vars(owner)[attr], stub))
        for layer in list(module_list)[1:]:
            layer.forward = stub  # instance attribute: nn.Module.__call__ picks it up
            layers.append(layer)
        stubs.append(stub)
    try:
        yield stubs
    finally:
        for handle in handles:
            handle.remove()
        for layer in layers:
            del layer.forward
        for owner, attr, value in originals:
            setattr(owner, attr, value)


def _renamed(path: str, stack: Stack, index: int) -> str | None:
    first = f"{stack.path}.0" if stack.path else "0"
    if path == first or path.startswith(first + "."):
        return f"{stack.path}.{index}" + path[len(first):] if stack.path else f"{index}" + path[len(first):]
    return None


def replicate(count: DispatchCount, stacks: list[Stack]) -> DispatchCount:
    """Copies of layer 0's records (and uncounted calls) for layers 1..n-1 of every stack."""
    records = list(count.records)
    for stack in stacks:
        for record in count.records:
            for i in range(1, stack.size):
                module = _renamed(record.module, stack, i)
                if module is not None:
                    records.append(OpRecord(record.op, module, record.part, record.flops))
    uncounted = {op: Counter(calls) for op, calls in count.uncounted.items()}
    for stack in stacks:
        for op, calls in count.uncounted.items():
            for module, n in calls.items():
                for i in range(1, stack.size):
                    renamed = _renamed(module, stack, i)
                    if renamed is not None:
                        uncounted[op][renamed] += n
    return DispatchCount(records, uncounted, count.elementwise)


def count_with_repeats(
    run: Callable[[], Any], root: nn.Module, attention_paths: Any = ()
) -> tuple[DispatchCount, list[Stack]]:
    """Like ``count_flops``, running one layer per identical stack; the stacks it relied on (or [])."""
    stacks = identical_stacks(root)
    if stacks:
        try:
            with _stubbed(root, stacks) as stubs:
                count = count_flops(run, root, attention_paths)
        except Exception:  # noqa: BLE001 - a pass-through the model did not expect: count every layer
            stubs = []
        if stubs and all(stub.ok and stub.expected is not None for stub in stubs):
            return replicate(count, stacks), stacks
    return count_flops(run, root, attention_paths), []
