"""Which attention kernel a training step runs, and what it saves for backward.

Activation memory depends on the kernel behind ``F.scaled_dot_product_attention``:

- ``math`` (and eager attention, which never calls SDPA): softmax(QKᵀ) is a tensor, so autograd keeps the
  S×S probabilities (and the dropout mask) of every head.
- ``cpu_flash`` (``aten._scaled_dot_product_flash_attention_for_cpu``), ``flash``
  (``aten._scaled_dot_product_flash_attention``, Dao et al. 2022), ``efficient``
  (``aten._scaled_dot_product_efficient_attention``, xFormers) and ``cudnn``: the kernel keeps q, k, v,
  its output and a float32 log-sum-exp per query and head, O(S), and recomputes the scores in backward.

``choose`` follows torch's dispatcher (``sdp_utils``): on the CPU the flash kernel unless dropout is on
(then math); on CUDA flash for 16-bit inputs without an explicit mask and d_head ≤ 256, else memory-efficient,
unless the call groups heads (``enable_gqa``), which the memory-efficient kernel does not take: then math. On an
H200 torch 2.11 runs cuDNN's kernel where this says flash; it saves the same tensors (measured there).
On meta SDPA always takes its math path, so ``Routed`` sends each call to the chosen kernel's aten op,
whose meta kernel and derivative save what the real kernel saves; the FLOP formulas are the same.

Dropout too depends on the device: on the CPU (and on meta) ``F.dropout`` multiplies by a mask of the input's
dtype, which autograd keeps; on CUDA it runs the fused ``aten.native_dropout``, which keeps a boolean mask
(one byte an element). ``Routed`` sends training dropout on ``cuda`` to that op.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

FUSED = ("cpu_flash", "flash", "efficient", "cudnn")
KERNELS = ("math", *FUSED)
DEVICES = ("cpu", "cuda")
SAVES = {
    "eager": "eager attention (no SDPA call): the S×S probabilities",
    "math": "SDPA math kernel: the S×S probabilities",
    "cpu_flash": "SDPA CPU flash kernel: q, k, v, output and a log-sum-exp per query (O(S))",
    "flash": "SDPA flash kernel: q, k, v, output and a log-sum-exp per query (O(S))",
    "efficient": "SDPA memory-efficient kernel: q, k, v, output and a log-sum-exp per query (O(S))",
    "cudnn": "SDPA cuDNN kernel: q, k, v, output and a log-sum-exp per query (O(S))",
}


def choose(device: str, dtype: torch.dtype, dropout: float, masked: bool, d_head: int, d_v: Optional[int] = None,
           grouped: bool = False) -> str:
    """The kernel torch picks for one SDPA call on ``device`` (cpu or cuda); values narrower or wider than the
    queries (``d_v`` != ``d_head``: multi-head latent attention) rule out the flash kernels, and grouped heads
    (``enable_gqa`` with fewer key heads) the memory-efficient one, which leaves the math kernel."""
    same = d_v is None or d_v == d_head
    if device == "cpu":
        return "math" if dropout > 0 or not same else "cpu_flash"
    if dtype in (torch.float16, torch.bfloat16) and not masked and d_head <= 256 and same:
        return "flash"
    return "math" if grouped else "efficient"


def _bias(mask: Optional[torch.Tensor], query: torch.Tensor) -> Optional[torch.Tensor]:
    """A boolean mask (True = may attend) as the additive bias the fused kernels take."""
    if mask is None or mask.dtype != torch.bool:
        return mask
    return torch.zeros((), dtype=query.dtype, device=query.device).masked_fill(~mask, -math.inf)


def _fused(kernel: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor],
           dropout: float, causal: bool, scale: Optional[float]) -> torch.Tensor:
    if kernel in ("efficient", "cudnn") and k.shape[-3] != q.shape[-3]:  # GQA: the flash kernels read shared heads
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
        v = v.repeat_interleave(q.shape[-3] // v.shape[-3], dim=-3)
    bias = _bias(mask, q)
    aten = torch.ops.aten
    if kernel == "cpu_flash":
        return aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout, causal, attn_mask=bias, scale=scale)[0]
    if kernel == "flash" and bias is None:
        return aten._scaled_dot_product_flash_attention(q, k, v, dropout, causal, False, scale=scale)[0]
    if bias is not None:
        bias = bias.expand(q.shape[0], q.shape[-3], q.shape[-2], k.shape[-2])
    return aten._scaled_dot_product_efficient_attention(q, k, v, bias, True, dropout, causal, scale=scale)[0]


def _dropout(input: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> torch.Tensor:
    """``F.dropout`` as CUDA runs it (``at::dropout``): the fused op, keeping a boolean mask, for a training call
    with 0 < p < 1 on a non-empty tensor; anything else as ``F.dropout`` does it."""
    if training and not inplace and 0 < p < 1 and input.numel() > 0:
        return torch.native_dropout(input, p, True)[0]
    return F.dropout(input, p, training, inplace)


class Routed(TorchFunctionMode):
    """Sends every ``F.scaled_dot_product_attention`` call to the kernel ``choose`` (or ``override``) names, and
    on ``cuda`` every training ``F.dropout`` to the fused op CUDA runs."""

    def __init__(self, device: str = "cpu", override: Optional[str] = None) -> None:
        super().__init__()
        self.device, self.override = device, override
        self.used: dict[str, int] = {}  # kernel -> calls

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is F.dropout and self.device == "cuda":
            return _dropout(*args, **kwargs)
        if func is not F.scaled_dot_product_attention:
            return func(*args, **kwargs)
        names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
        call = dict(zip(names, args), **kwargs)
        q, k, v, mask = call["query"], call["key"], call["value"], call.get("attn_mask")
        dropout, causal, scale = call.get("dropout_p", 0.0), call.get("is_causal", False), call.get("scale")
        grouped = bool(call.get("enable_gqa", False)) and k.shape[-3] != q.shape[-3]
        kernel = self.override or choose(self.device, q.dtype, dropout, mask is not None, q.shape[-1], v.shape[-1],
                                         grouped)
        self.used[kernel] = self.used.get(kernel, 0) + 1
        if kernel == "math" or q.dim() != 4:
            return func(*args, **kwargs)
        return _fused(kernel, q, k, v, mask, dropout, causal, scale)

    def kernel(self) -> str:
        """The kernel of most calls; ``eager`` when the model never called SDPA."""
        return max(self.used, key=self.used.get) if self.used else "eager"
