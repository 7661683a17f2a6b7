"""Shape-only kernels for the meta device: the output of an op without running its meta kernel.

On the meta device many aten ops (addmm, layer norm, softmax, elementwise
arithmetic) run Python reference kernels from ``torch._refs``; the first such
call imports ``torch._dynamo`` (about a second) and each costs tens of
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


def _unary(x: torch.Tensor, *_: Any, **__: Any) -> Optional[torch.Tensor]:
    return _empty(x.shape, x) if x.dtype.is_floating_point else None


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
        aten.add.Tensor, aten.sub.Tensor, aten.mul.Tensor, aten.div.Tensor,
        aten.add.Scalar, aten.sub.Scalar, aten.mul.Scalar, aten.div.Scalar,
    )},
    **{op: _unary for op in (
        aten.gelu.default, aten.relu.default, aten.tanh.default, aten.sqrt.default, aten.rsqrt.default,
        aten.exp.default, aten.neg.default, aten.pow.Tensor_Scalar,
    )},
    **{op: _reduce for op in (aten.mean.dim, aten.sum.dim_IntList, aten.var.correction, aten.std.correction)},
}


def on_meta(args: tuple, kwargs: dict) -> bool:
    """Every tensor argument is a meta tensor (and there is at least one)."""
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    return bool(tensors) and all(t.device.type == "meta" for t in tensors)


def shortcut(func: Any, args: tuple, kwargs: dict) -> Optional[Any]:
    """The output of ``func`` on meta tensors from shapes alone, or None where there is no shortcut."""
    kernel = SHORTCUTS.get(func)
    if kernel is None or not on_meta(args, kwargs):
        return None
    return kernel(*args, **kwargs)
