"""Shape-only kernels for the meta device: the output of an op without running its meta kernel.

On the meta device many aten ops (addmm, layer norm, softmax, elementwise
arithmetic, ``arange``) run Python reference kernels from ``torch._refs``; the
first such call imports ``torch._dynamo`` (about a second) and each costs tens of
microseconds. Counting FLOPs needs only each output's shape and dtype, so for
the ops below ``shortcut`` returns empty meta tensors of the right shape
(contiguous) and ``None`` for everything else, which then runs its real kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import torch

aten = torch.ops.aten


def _empty(shape: Any, like: torch.Tensor, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    return torch.empty(tuple(shape), dtype=dtype or like.dtype, device="meta")


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _empty((a.shape[0], b.shape[1]), a)  # (m, k) x (k, n) -> (m, n)


def _bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _empty((a.shape[0], a.shape[1], b.shape[2]), a)  # (b, m, k) x (b, k, n) -> (b, m, n)


def _layer_norm(x: torch.Tensor, normalized_shape: Any, *_: Any) -> tuple[torch.Tensor, ...]:
    kept = x.shape[: x.dim() - len(normalized_shape)]
    stats = tuple(kept) + (1,) * len(normalized_shape)  # mean and rstd: (*kept, 1, ...)
    stat_dtype = torch.float32 if x.dtype in (torch.half, torch.bfloat16) else x.dtype
    return _empty(x.shape, x), _empty(stats, x, stat_dtype), _empty(stats, x, stat_dtype)


def _same(x: torch.Tensor, *_: Any, **__: Any) -> torch.Tensor:
    return _empty(x.shape, x)


def _promote(a: Any, b: Any) -> torch.dtype:
    """torch.result_type, without its cost in the common cases (same dtype; float tensor and a Python number)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype:
        return a.dtype
    tensor, other = (a, b) if isinstance(a, torch.Tensor) else (b, a)
    if isinstance(other, (int, float)) and not isinstance(other, bool) and tensor.dtype.is_floating_point:
        return tensor.dtype
    return torch.result_type(a, b)


def _binary(a: Any, b: Any, *_: Any, **__: Any) -> Optional[torch.Tensor]:
    shapes = [t.shape for t in (a, b) if isinstance(t, torch.Tensor)]
    dtype = _promote(a, b)
    if not dtype.is_floating_point:
        return None  # integer or boolean arithmetic: let the real kernel decide (true division, promotion)
    like = a if isinstance(a, torch.Tensor) else b
    return _empty(torch.broadcast_shapes(*shapes), like, dtype)


def _integer(a: Any, b: Any, *_: Any, alpha: Any = 1) -> Optional[torch.Tensor]:
    """add/sub/mul of two integer tensors of one dtype (positions, indices): that dtype, broadcast."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.dtype != b.dtype:
        return _binary(a, b)
    if not isinstance(alpha, int):
        return None  # a float alpha with integer tensors: torch refuses it
    if a.dtype.is_floating_point or a.dtype.is_complex or a.dtype == torch.bool:
        return _binary(a, b)  # floats as before; booleans: torch refuses to subtract them
    return _empty(torch.broadcast_shapes(a.shape, b.shape), a)


def _unary(x: torch.Tensor, *_: Any, **__: Any) -> Optional[torch.Tensor]:
    return _empty(x.shape, x) if x.dtype.is_floating_point else None


def _any_dtype(x: torch.Tensor, *_: Any, **__: Any) -> Optional[torch.Tensor]:
    """tril/triu/bitwise_not: the input's shape and dtype (masks are boolean)."""
    return _empty(x.shape, x) if isinstance(x, torch.Tensor) else None


def _where(condition: torch.Tensor, a: Any, b: Any) -> Optional[torch.Tensor]:
    tensors = (condition, a, b)
    if not all(isinstance(t, torch.Tensor) for t in tensors) or a.dtype != b.dtype or condition.dtype != torch.bool:
        return None
    return _empty(torch.broadcast_shapes(*(t.shape for t in tensors)), a)


def _masked_fill(x: torch.Tensor, mask: torch.Tensor, value: Any) -> Optional[torch.Tensor]:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or mask.dtype != torch.bool:
        return None
    if torch.broadcast_shapes(x.shape, mask.shape) != x.shape or not x.dtype.is_floating_point:
        return None
    return _empty(x.shape, x)


def _embedding(weight: torch.Tensor, indices: torch.Tensor, *_: Any) -> Optional[torch.Tensor]:
    """A lookup: (*indices, width) rows of the table (torch's meta kernel imports torch.fx's symbolic shapes)."""
    if weight.dim() != 2 or indices.dtype not in (torch.long, torch.int):
        return None
    return _empty((*indices.shape, weight.shape[1]), weight)


def _cat(tensors: Any, dim: int = 0) -> Optional[torch.Tensor]:
    """Concatenation of tensors of one dtype and rank along ``dim`` (no legacy empty 1-D tensors)."""
    tensors = list(tensors)
    if not tensors or any(t.dtype != tensors[0].dtype or t.dim() != tensors[0].dim() for t in tensors):
        return None
    rank = tensors[0].dim()
    if rank == 0 or not -rank <= dim < rank:
        return None
    dim %= rank
    shape = list(tensors[0].shape)
    if any(list(t.shape[:dim]) + list(t.shape[dim + 1:]) != shape[:dim] + shape[dim + 1:] for t in tensors):
        return None  # torch raises: sizes must match except along dim
    shape[dim] = sum(t.shape[dim] for t in tensors)
    return _empty(shape, tensors[0])


def _reduce(x: torch.Tensor, dim: Any = None, *args: Any, keepdim: bool = False, **kwargs: Any) -> Optional[torch.Tensor]:
    """mean/sum/var/std over ``dim`` (an int, a list, or None for all): drop or keep the reduced axes."""
    if args and isinstance(args[0], bool):
        keepdim = args[0]  # mean.dim / sum.dim_IntList take keepdim positionally
    if not x.dtype.is_floating_point or kwargs.get("dtype") is not None:
        return None
    dims = range(x.dim()) if dim is None or dim == [] else [dim] if isinstance(dim, int) else dim
    dims = {d % max(x.dim(), 1) for d in dims}
    shape = [1 if i in dims else n for i, n in enumerate(x.shape) if keepdim or i not in dims]
    return _empty(shape, x)


SHORTCUTS: dict[Any, Callable[..., Any]] = {
    aten.mm.default: _mm,
    aten.addmm.default: lambda bias, a, b, **_: _mm(a, b),
    aten.bmm.default: _bmm,
    aten.baddbmm.default: lambda bias, a, b, **_: _bmm(a, b),
    aten.native_layer_norm.default: _layer_norm,
    aten._softmax.default: _same,
    aten._safe_softmax.default: _same,
    aten._log_softmax.default: _same,
    **{op: _binary for op in (
        aten.div.Tensor, aten.add.Scalar, aten.sub.Scalar, aten.mul.Scalar, aten.div.Scalar, aten.pow.Scalar,
    )},
    **{op: _integer for op in (aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor)},
    **{op: _unary for op in (
        aten.gelu.default, aten.relu.default, aten.tanh.default, aten.sqrt.default, aten.rsqrt.default,
        aten.exp.default, aten.neg.default, aten.pow.Tensor_Scalar, aten.cos.default, aten.sin.default,
        aten.abs.default,
    )},
    **{op: _any_dtype for op in (aten.tril.default, aten.triu.default, aten.bitwise_not.default)},
    aten.where.self: _where,
    aten.masked_fill.Scalar: _masked_fill,
    aten.cat.default: _cat,
    aten.embedding.default: _embedding,
    **{op: _reduce for op in (aten.mean.dim, aten.sum.dim_IntList, aten.var.correction, aten.std.correction)},
}


def _arange(*args: Any, dtype: Optional[torch.dtype] = None, layout: Any = None, device: Any = None,
            pin_memory: Any = None, requires_grad: bool = False) -> Optional[torch.Tensor]:
    """arange(end) / arange(start, end) / arange(start, end, step) with integer bounds, as ``torch._refs.arange``.

    Integer bounds give int64 unless ``dtype`` says otherwise and ``(end - start + step - sign(step)) // step``
    elements; float bounds, a wrong sign, or anything unusual run the real kernel.
    """
    start, end, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    plain = all(isinstance(a, int) and not isinstance(a, bool) for a in (start, end, step))
    unusual = requires_grad or pin_memory or layout not in (None, torch.strided) or dtype in (torch.bool, torch.complex64)
    if not plain or step == 0 or unusual:
        return None
    length = (end - start + step - (1 if step > 0 else -1)) // step
    if length < 0:
        return None  # torch raises: the bounds disagree with the step's sign
    return torch.empty(length, dtype=dtype or torch.int64, device="meta")


# Ops with no tensor argument: shortcut when they are asked for a meta tensor.
FACTORIES: dict[Any, Callable[..., Optional[torch.Tensor]]] = {
    aten.arange.default: _arange,
    aten.arange.start: _arange,
    aten.arange.start_step: _arange,
}


def on_meta(args: tuple, kwargs: dict) -> bool:
    """Every tensor argument (or tensor in a list argument, as cat's) is a meta tensor, and there is at least one."""
    values = [v for a in (*args, *kwargs.values()) for v in (a if isinstance(a, (list, tuple)) else (a,))]
    tensors = [a for a in values if isinstance(a, torch.Tensor)]
    return bool(tensors) and all(t.device.type == "meta" for t in tensors)


def shortcut(func: Any, args: tuple, kwargs: dict) -> Optional[Any]:
    """The output of ``func`` on meta tensors from shapes alone, or None where there is no shortcut."""
    factory = FACTORIES.get(func)
    if factory is not None:
        return factory(*args, **kwargs) if str(kwargs.get("device")) == "meta" else None
    kernel = SHORTCUTS.get(func)
    if kernel is None or not on_meta(args, kwargs):
        return None
    return kernel(*args, **kwargs)
