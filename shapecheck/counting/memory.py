"""Training and inference memory, in bytes, with the conventions each figure uses.

- weights: parameters × bytes per element of ``dtype``.
- gradients: one per trainable parameter, in ``dtype``.
- optimizer (Adam, Kingma & Ba 2015): two float32 moments per parameter (8 bytes), plus a float32
  master copy of the weights (4 bytes) when ``dtype`` is 16-bit (mixed precision, Micikevicius et al.
  2018; the 16 bytes/parameter of Rajbhandari et al. 2020, ZeRO, section 3.1, with weights and gradients).
- activations: the tensors saved for backward, measured (``measure.train``); Korthikanti et al. 2022
  (section 4.1, eq. 1) estimate s·b·h·(34 + 5·a·s/h) bytes per layer for 16-bit GPT layers without recomputation.
- train_peak: weights + optimizer + the most bytes live at once over forward, loss and backward (``measure.train``
  follows every storage an op makes until torch frees it: activations, each op's transients, the loss's float
  copies, the gradients, which zero_grad's default frees between steps). Against ``torch.cuda.max_memory_allocated``
  over a step it leaves out cuBLAS's workspaces (about 68 MB on an H200) and the allocator's rounding
  (README: 0.90-1.09 of the peak measured on an H200 less the workspaces).
- kv_cache: keys and values of every attention layer for ``context`` tokens: 2·h_kv·d_head per layer per token.
"""

from __future__ import annotations

from typing import Optional

import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
ADAM_MOMENTS = 8  # two float32 moments
MASTER_COPY = 4  # float32 weights kept by mixed precision


def itemsize(dtype: str) -> int:
    return DTYPES[dtype].itemsize


def optimizer_bytes(params: int, dtype: str) -> int:
    return params * (ADAM_MOMENTS + (MASTER_COPY if itemsize(dtype) == 2 else 0))


def kv_cache_bytes(widths: list[int], context: int, batch: int, dtype: str) -> int:
    """``widths``: the values each attention layer caches per token (``Part.cache_width``: 2·h_kv·d_head)."""
    return sum(widths) * context * batch * itemsize(dtype)


def korthikanti(seq: int, batch: int, d_model: int, heads: int, layers: int) -> int:
    """Korthikanti et al. 2022, eq. 1: s·b·h·(34 + 5·a·s/h) bytes per layer (16-bit activations)."""
    return layers * (seq * batch * d_model * 34 + 5 * heads * seq * seq * batch)


def memory(params: int, trainable: int, dtype: str, activations: Optional[int], kv: int,
           live_peak: Optional[int] = None) -> dict[str, Optional[int]]:
    """Bytes of each kind; ``train_peak`` (train only): the weights, the optimizer's state and ``live_peak``,
    the most bytes the step's own tensors held at once (gradients included)."""
    size = itemsize(dtype)
    found = {"weights": params * size, "gradients": trainable * size, "optimizer": optimizer_bytes(trainable, dtype),
             "activations": activations, "kv_cache": kv}
    found["train_peak"] = None if live_peak is None else found["weights"] + found["optimizer"] + live_peak
    return found
