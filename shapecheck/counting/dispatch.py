"""Dispatch-level FLOP counting: every aten op a forward pass runs, with its module and its FLOPs.

``count_flops(run, root)`` calls ``run()`` under a ``TorchDispatchMode`` and
returns a ``DispatchCount``: one ``OpRecord`` per op that did matmul work (the
innermost module that ran it, a part label, the FLOPs at 2 per multiply-add),
and ``uncounted``: ops that did arithmetic and have no formula here. Nothing
is silently zero: an op is either counted, known to be elementwise (covered by
the analytic "other" column of ``formulas``), known to do no arithmetic (views,
copies, gathers, dropout), or listed as uncounted.

Formulas: ``torch.utils.flop_counter``'s registry (mm, addmm, bmm, baddbmm,
convolutions, ...) plus ours (``ATTENTION_FORMULAS``) for the attention ops it
lacks or counts as one lump: ``aten._scaled_dot_product_flash_attention_for_cpu``
(what ``F.scaled_dot_product_attention`` runs on CPU), every other
``_scaled_dot_product_*`` variant, ``aten._native_multi_head_attention``
(``nn.MultiheadAttention``'s fast path under ``eval()`` + ``no_grad()``) and
``aten._transformer_encoder_layer_fwd`` (``nn.TransformerEncoderLayer``'s).
They split their FLOPs into parts (``q k v o scores av w_1 w_2``) so a report
can put them on the rows of the explicit-matmul path. ``flop_counter_mapping()``
gives the same formulas as a ``custom_mapping`` for ``FlopCounterMode``.

Part labels: ``matmul`` for ordinary products; a batched product (bmm, baddbmm)
run directly by a module listed in ``attention_paths`` is labelled ``scores``
and ``av`` in turn, as the explicit path computes QKᵀ then softmax·V.
"""

from __future__ import annotations

import bisect
import logging
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from shapecheck.counting.meta import shortcut


class _TritonKernel(type):
    """``isinstance(x, _JITFunction)`` in flop_counter, answered without importing triton.

    An object can only be a triton ``JITFunction`` once ``triton.runtime.jit`` is loaded, so checking
    ``sys.modules`` first gives the same answer as the class itself.
    """

    def __instancecheck__(cls, instance: Any) -> bool:
        jit = sys.modules.get("triton.runtime.jit")
        return jit is not None and isinstance(instance, jit.JITFunction)


class _TritonJITFunction(metaclass=_TritonKernel):
    pass


def _import_flop_counter() -> Any:
    """``torch.utils.flop_counter`` without the ~0.2 s import of triton it does only to name ``JITFunction``.

    While it loads, ``triton.runtime.jit`` is hidden (its own "triton not found" warning silenced); its
    ``_JITFunction`` then becomes ``_TritonJITFunction``, which recognises a JITFunction exactly as before.
    Where triton is already loaded, or flop_counter is, nothing is hidden.
    """
    name = "torch.utils.flop_counter"
    if name in sys.modules or "triton.runtime.jit" in sys.modules:
        return __import__(name, fromlist=["flop_registry"])
    log = logging.getLogger(name)
    disabled, log.disabled = log.disabled, True
    sys.modules["triton.runtime.jit"] = None  # type: ignore[assignment]  # import fails fast: ImportError
    try:
        module = __import__(name, fromlist=["flop_registry"])
    finally:
        del sys.modules["triton.runtime.jit"]
        log.disabled = disabled
    module._JITFunction = _TritonJITFunction
    return module


flop_registry = _import_flop_counter().flop_registry

aten = torch.ops.aten
Shape = tuple[int, ...]


# --- formulas for the attention ops ------------------------------------------------------------


def sdpa_parts(query: Shape, key: Shape, value: Shape) -> dict[str, int]:
    """softmax(QKᵀ)V on (*batch, S_q, d_k) x (*batch, S_k, d_k) x (*batch, S_k, d_v), full S_q x S_k."""
    batch, seq_q, d_k = math.prod(query[:-2]), query[-2], query[-1]
    seq_k, d_v = key[-2], value[-1]
    return {"scores": 2 * batch * seq_q * seq_k * d_k, "av": 2 * batch * seq_q * seq_k * d_v}


def _sdpa(query: Any, key: Any, value: Any, *_: Any, **__: Any) -> dict[str, int]:
    return sdpa_parts(tuple(query.shape), tuple(key.shape), tuple(value.shape))


def _sdpa_seq_first(query: Any, key: Any, value: Any, *_: Any, **__: Any) -> dict[str, int]:
    """_flash/_efficient_attention_forward take (batch, seq, heads, d): move heads before seq."""
    swap = lambda s: (*s[:-3], s[-2], s[-3], s[-1])  # noqa: E731
    return sdpa_parts(swap(tuple(query.shape)), swap(tuple(key.shape)), swap(tuple(value.shape)))


def _sdpa_backward(grad_out: Any, query: Any, key: Any, value: Any, *_: Any, **__: Any) -> dict[str, int]:
    """The backward of softmax(QKᵀ)V: dV = PᵀdO and dP = dO·Vᵀ (2 × av), dQ = dS·K and dK = dSᵀ·Q (2 × scores).

    The same four products as ``torch.utils.flop_counter.sdpa_backward_flop_count`` (the recomputation of P
    that flash kernels do is not counted there either), so backward = 2 × forward for attention as for Linear.
    """
    return {part: 2 * flops for part, flops in _sdpa(query, key, value).items()}


def _sdpa_backward_seq_first(grad_out: Any, query: Any, key: Any, value: Any, *_: Any, **__: Any) -> dict[str, int]:
    return {part: 2 * flops for part, flops in _sdpa_seq_first(query, key, value).items()}


def mha_parts(batch: int, seq_q: int, seq_k: int, d_model: int) -> dict[str, int]:
    """Packed multi-head attention with h·d_k = h·d_v = d_model (nn.MultiheadAttention's layout)."""
    token_q, token_k = 2 * batch * seq_q * d_model * d_model, 2 * batch * seq_k * d_model * d_model
    core = 2 * batch * seq_q * seq_k * d_model
    return {"q": token_q, "k": token_k, "v": token_k, "scores": core, "av": core, "o": token_q}


def token_groups(x: Any) -> list[tuple[int, int]]:
    """(batch, seq) groups of a batch-first input: one for a dense tensor, one per sequence for a nested one.

    A nested tensor (what nn.TransformerEncoder builds from a padding mask under eval + no_grad) holds each
    sequence at its own length; the fused kernels then skip the padding, so only real tokens are counted.
    """
    if getattr(x, "is_nested", False):
        return [(1, int(n)) for n in x._nested_tensor_size()[:, 0].tolist()]
    return [(x.shape[0], x.shape[1])]


def _summed(parts: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = defaultdict(int)
    for item in parts:
        for part, flops in item.items():
            total[part] += flops
    return dict(total)


def _native_mha(query: Any, key: Any, value: Any, embed_dim: int, *_: Any, **__: Any) -> dict[str, int]:
    """aten._native_multi_head_attention: batch-first (batch, seq, d_model) query and key, dense or nested."""
    pairs = zip(token_groups(query), token_groups(key))
    return _summed(mha_parts(batch, seq_q, seq_k, embed_dim) for (batch, seq_q), (_, seq_k) in pairs)


def _encoder_layer(src: Any, embed_dim: int, *args: Any, **kwargs: Any) -> dict[str, int]:
    """aten._transformer_encoder_layer_fwd: self-attention, then Linear d_model->d_ff->d_model (dense or nested)."""
    ffn_weight_1 = args[12] if len(args) > 12 else kwargs["ffn_weight_1"]
    d_ff = ffn_weight_1.shape[0]

    def layer(batch: int, seq: int) -> dict[str, int]:
        parts = mha_parts(batch, seq, seq, embed_dim)
        parts["w_1"] = parts["w_2"] = 2 * batch * seq * embed_dim * d_ff
        return parts

    return _summed(layer(batch, seq) for batch, seq in token_groups(src))


def _grouped_mm(a: Any, b: Any, *_: Any, **__: Any) -> dict[str, int]:
    """``aten._grouped_mm`` (MoE kernels: one product per expert over its tokens), 2 FLOPs per multiply-add.

    2d×2d (groups along K), 2d×3d (along M), 3d×3d (a batch of groups): every row of ``a`` meets every column of
    ``b`` of its group, 2·numel(a)·N; 3d×2d (groups along N): each group's M×K block meets its own N_g columns,
    2·M·K·N_total.
    """
    a_shape, b_shape = tuple(a.shape), tuple(b.shape)
    rows = math.prod(a_shape) // (a_shape[0] if len(a_shape) == 3 and len(b_shape) == 2 else 1)
    return {"matmul": 2 * rows * b_shape[-1]}


_FORMULA_BY_NAME: dict[str, Callable[..., dict[str, int]]] = {
    "_grouped_mm": _grouped_mm,
    "_scaled_dot_product_flash_attention_for_cpu": _sdpa,
    "_scaled_dot_product_flash_attention": _sdpa,
    "_scaled_dot_product_efficient_attention": _sdpa,
    "_scaled_dot_product_cudnn_attention": _sdpa,
    "_scaled_dot_product_fused_attention_overrideable": _sdpa,
    "_scaled_dot_product_attention_math": _sdpa,
    "_scaled_dot_product_attention_math_for_mps": _sdpa,
    "_flash_attention_forward": _sdpa_seq_first,
    "_efficient_attention_forward": _sdpa_seq_first,
    "_scaled_dot_product_flash_attention_for_cpu_backward": _sdpa_backward,
    "_scaled_dot_product_flash_attention_backward": _sdpa_backward,
    "_scaled_dot_product_efficient_attention_backward": _sdpa_backward,
    "_scaled_dot_product_cudnn_attention_backward": _sdpa_backward,
    "_scaled_dot_product_fused_attention_overrideable_backward": _sdpa_backward,
    "_flash_attention_backward": _sdpa_backward_seq_first,
    "_efficient_attention_backward": _sdpa_backward_seq_first,
    "_native_multi_head_attention": _native_mha,
    "_transformer_encoder_layer_fwd": _encoder_layer,
}
# The ops this torch build has (older builds lack some variants).
ATTENTION_FORMULAS: dict[Any, Callable[..., dict[str, int]]] = {
    getattr(aten, name): formula for name, formula in _FORMULA_BY_NAME.items() if hasattr(aten, name)
}


class _Shaped:
    """Stands in for a tensor where FlopCounterMode hands formulas shapes instead of tensors."""

    def __init__(self, shape: Any) -> None:
        self.shape = tuple(shape)


def flop_counter_mapping() -> dict[Any, Callable[..., int]]:
    """Our attention formulas as a ``custom_mapping`` for ``torch.utils.flop_counter.FlopCounterMode``.

    Forward and backward: with it, FlopCounterMode counts a dense model's training step (forward + backward)
    as 3 × its forward, SDPA on the CPU included (torch's own registry has no ``*_for_cpu`` formulas).
    """

    def total(formula: Callable[..., dict[str, int]]) -> Callable[..., int]:
        def count(*args: Any, out_shape: Any = None, **kwargs: Any) -> int:
            wrap = lambda a: _Shaped(a) if isinstance(a, (tuple, list, torch.Size)) and a and isinstance(a[0], int) else a  # noqa: E731
            return sum(formula(*map(wrap, args), **kwargs).values())

        return count

    return {op: total(formula) for op, formula in ATTENTION_FORMULAS.items()}


# --- what the other ops are ------------------------------------------------------------------

ELEMENTWISE = frozenset(
    "add sub rsub mul div neg pow sqrt rsqrt exp log tanh relu gelu sigmoid erf softmax _softmax _safe_softmax "
    "log_softmax _log_softmax native_layer_norm layer_norm mean sum var std var_mean std_mean amax amin max min "
    "clamp clamp_min clamp_max maximum minimum addcmul addcdiv reciprocal sin cos abs sign square silu "
    "add_ sub_ mul_ div_ clamp_ relu_".split()
)
NO_ARITHMETIC = frozenset(
    "view _unsafe_view reshape _reshape_alias t transpose permute expand expand_as view_as clone contiguous copy "
    "copy_ _to_copy to detach alias select slice unsqueeze squeeze split split_with_sizes chunk unbind cat stack "
    "index_select index embedding gather zeros zeros_like ones ones_like empty empty_like empty_strided full "
    "full_like new_zeros new_ones new_empty new_full new_empty_strided arange lift_fresh lift_fresh_copy fill fill_ "
    "zero_ tril triu masked_fill where eq ne lt gt le ge logical_not logical_and logical_or bitwise_not bitwise_and "
    "bitwise_or any all as_strided unfold flatten repeat scalar_tensor _local_scalar_dense native_dropout dropout "
    "bernoulli bernoulli_ rand rand_like randn randn_like uniform_ normal_ sym_size sym_stride sym_numel "
    "is_same_size _has_compatible_shallow_copy_type resize_ set_ _nested_tensor_from_mask "
    "_nested_tensor_from_mask_left_aligned _nested_tensor_size _nested_tensor_strides "
    "_nested_tensor_storage_offsets to_padded_tensor _nested_from_padded".split()
)
BATCHED_MATMULS = frozenset({aten.bmm, aten.baddbmm})


def _kind_of(name: str, names: frozenset) -> bool:
    """``name`` or, for an in-place op such as ``masked_fill_``, its out-of-place form is in ``names``."""
    return name in names or (name.endswith("_") and name[:-1] in names)


@dataclass(frozen=True)
class OpRecord:
    """One op that did matmul work: which aten op, the innermost module that ran it, its part, FLOPs."""

    op: str
    module: str
    part: str
    flops: int


@dataclass
class DispatchCount:
    """What one forward pass did, op by op."""

    records: list[OpRecord] = field(default_factory=list)
    uncounted: dict[str, Counter] = field(default_factory=dict)  # op -> Counter(module -> calls)
    elementwise: Counter = field(default_factory=Counter)  # op -> calls (analytic "other" column)

    @property
    def total(self) -> int:
        return sum(r.flops for r in self.records)

    def uncounted_list(self) -> list[dict[str, Any]]:
        """[{"op", "calls", "modules"}] for every op that did arithmetic with no formula."""
        return [
            {"op": op, "calls": sum(calls.values()), "modules": sorted(calls)}
            for op, calls in sorted(self.uncounted.items())
        ]

    def by_part(self) -> dict[str, int]:
        parts: dict[str, int] = defaultdict(int)
        for r in self.records:
            parts[r.part] += r.flops
        return dict(parts)

    def by_module(self) -> dict[str, int]:
        modules: dict[str, int] = defaultdict(int)
        for r in self.records:
            modules[r.module] += r.flops
        return dict(modules)


class _ModuleStack:
    """The innermost module running now, by its qualified name under ``root`` ("" for root).

    In a backward pass no module runs: an op belongs to the module whose forward created the autograd node
    being executed. Autograd numbers nodes in creation order (``sequence_nr``), so each change of the stack
    is logged with the number the next node gets, and a node's owner is the innermost module at the last
    change before it was created (a decision from the graph, not from hooks on the backward pass).
    """

    def __init__(self, root: nn.Module) -> None:
        self.names: dict[int, str] = {}
        for name, module in root.named_modules(remove_duplicate=False):
            self.names.setdefault(id(module), name)
        self.stack: list[str] = []
        self.handles: list[Any] = []
        self.changes: tuple[list[int], list[str]] = ([], [])  # (next sequence_nr, innermost module from then on)

    @property
    def owner(self) -> str:
        if self.stack:
            return self.stack[-1]
        node = torch._C._current_autograd_node()
        return self._created_in(node._sequence_nr()) if node is not None else ""

    def _created_in(self, sequence_nr: int) -> str:
        at = bisect.bisect_right(self.changes[0], sequence_nr) - 1
        return self.changes[1][at] if at >= 0 else ""

    def _log(self) -> None:
        sequence_nr = torch._C._autograd._get_sequence_nr()
        numbers, owners = self.changes
        if numbers and numbers[-1] == sequence_nr:  # no node created since the last change
            owners[-1] = self.stack[-1] if self.stack else ""
        else:
            numbers.append(sequence_nr)
            owners.append(self.stack[-1] if self.stack else "")

    def _enter(self, module: nn.Module, *_: Any) -> None:
        self.stack.append(self.names.get(id(module), self.owner))
        self._log()

    def _leave(self, *_: Any) -> None:
        if self.stack:
            self.stack.pop()
        self._log()

    def __enter__(self) -> "_ModuleStack":
        self.handles = [
            nn.modules.module.register_module_forward_pre_hook(self._enter),
            nn.modules.module.register_module_forward_hook(self._leave, always_call=True),
        ]
        return self

    def __exit__(self, *_: Any) -> None:
        for handle in self.handles:
            handle.remove()


class FlopDispatchMode(TorchDispatchMode):
    """Records every op's FLOPs with its owning module into a ``DispatchCount``."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Counting never runs under torch.compile; not wrapping keeps `import torch._dynamo` (~1 s) away.
        return False

    def __init__(self, modules: _ModuleStack, attention_paths: Iterable[str] = (), fast_meta: bool = True) -> None:
        super().__init__()
        self.modules, self.attention_paths, self.fast_meta = modules, frozenset(attention_paths), fast_meta
        self.count = DispatchCount()
        self._batched_seen: Counter = Counter()  # attention module -> batched products so far

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        out = shortcut(func, args, kwargs) if self.fast_meta else None
        if out is None:
            out = func(*args, **kwargs)
        self._record(func, args, kwargs, out)
        return out

    def _record(self, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        packet, owner = func.overloadpacket, self.modules.owner
        if packet in ATTENTION_FORMULAS:
            for part, flops in ATTENTION_FORMULAS[packet](*args, **kwargs).items():
                self.count.records.append(OpRecord(str(packet), owner, part, flops))
        elif packet in flop_registry:
            flops = int(flop_registry[packet](*args, **kwargs, out_val=out))
            self.count.records.append(OpRecord(str(packet), owner, self._part(packet, owner), flops))
        elif _kind_of(packet.__name__, ELEMENTWISE):
            self.count.elementwise[str(packet)] += 1
        elif not _kind_of(packet.__name__, NO_ARITHMETIC):
            self.count.uncounted.setdefault(str(packet), Counter())[owner] += 1

    def _part(self, packet: Any, owner: str) -> str:
        if packet not in BATCHED_MATMULS or owner not in self.attention_paths:
            return "matmul"
        self._batched_seen[owner] += 1
        return "scores" if self._batched_seen[owner] % 2 == 1 else "av"


def count_flops(
    run: Callable[[], Any], root: nn.Module, attention_paths: Iterable[str] = (), fast_meta: bool = True
) -> DispatchCount:
    """Run ``run()`` (a forward pass of ``root``) and count its ops; see the module docstring."""
    with _ModuleStack(root) as modules, FlopDispatchMode(modules, attention_paths, fast_meta) as mode:
        run()
    return mode.count
