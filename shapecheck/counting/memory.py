"""Training and inference memory, in bytes, with the conventions each figure uses.

- weights: parameters × bytes per element of ``dtype``.
- gradients: one per trainable parameter, in ``dtype``.
- optimizer (Adam, Kingma & Ba 2015): two float32 moments per parameter (8 bytes), plus a float32
  master copy of the weights (4 bytes) when ``dtype`` is 16-bit (mixed precision, Micikevicius et al.
  2018; the 16 bytes/parameter of Rajbhandari et al. 2020, ZeRO, section 3.1, with weights and gradients).
- activations: the tensors saved for backward, measured (``measure.train``); Korthikanti et al. 2022
  (section 4.1, eq. 1) estimate s·b·h·(34 + 5·a·s/h) bytes per layer for 16-bit GPT layers without recomputation.
- train_peak: weights + gradients + optimizer + activations + the largest transient (the logits and their
  float32 copy for the loss): a floor of ``torch.cuda.max_memory_allocated`` over a step, which also holds
  backward's transients and cuBLAS's workspaces (README: 0.31–0.87 of the peak measured on an H200).
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


def transient_bytes(output_numel: int, dtype: str) -> int:
    """The largest output (a language model's logits) in ``dtype`` and its float32 copy for the loss."""
    return output_numel * itemsize(dtype) + (output_numel * 4 if itemsize(dtype) != 4 else 0)


def memory(params: int, trainable: int, dtype: str, activations: Optional[int], kv: int,
           output_numel: int = 0) -> dict[str, Optional[int]]:
    """Bytes of each kind; ``train_peak`` (train only): weights, gradients, optimizer state, activations and
    the largest transient: a floor of ``torch.cuda.max_memory_allocated`` over one training step."""
    size = itemsize(dtype)
    found = {"weights": params * size, "gradients": trainable * size, "optimizer": optimizer_bytes(trainable, dtype),
             "activations": activations, "kv_cache": kv}
    found["train_peak"] = None if activations is None else (
        found["weights"] + found["gradients"] + found["optimizer"] + activations + transient_bytes(output_numel, dtype))
    return found
