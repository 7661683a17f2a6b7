"""Constructors verify must build without help, or with --init: a dict config read by key (``cfg["emb_dim"]``, the
LLMs-from-scratch style), and a constructor taking lists (Swin's depths) and a torch dtype. Each ``*Bug`` twin scales
the scores by the model width instead of the head size."""

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class _Attention(nn.Module):
    def setup(self, d_model: int, n_heads: int, bias: bool, dtype: torch.dtype = torch.float32) -> None:
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.W_query = nn.Linear(d_model, d_model, bias=bias, dtype=dtype)
        self.W_key = nn.Linear(d_model, d_model, bias=bias, dtype=dtype)
        self.W_value = nn.Linear(d_model, d_model, bias=bias, dtype=dtype)
        self.out_proj = nn.Linear(d_model, d_model, dtype=dtype)

    def scale(self) -> float:
        return self.head_dim ** -0.5

    def forward(self, x: Tensor) -> Tensor:
        batch, seq, width = x.shape
        q, k, v = (w(x).view(batch, seq, self.n_heads, self.head_dim).transpose(1, 2) for w in (self.W_query, self.W_key, self.W_value))
        probs = F.softmax(q @ k.transpose(-2, -1) * self.scale(), dim=-1)  # (batch, heads, seq, seq)
        return self.out_proj((probs @ v).transpose(1, 2).reshape(batch, seq, width))


class DictConfig(_Attention):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.setup(cfg["emb_dim"], cfg["n_heads"], cfg.get("qkv_bias", False))
        self.dropout = nn.Dropout(cfg["drop_rate"])


class DictConfigBug(DictConfig):
    def scale(self) -> float:
        return (self.n_heads * self.head_dim) ** -0.5  # BUG: the model width


class ListsAndDtype(_Attention):
    def __init__(self, dim: int, num_heads: int, depths: list[int], dtype: torch.dtype) -> None:
        super().__init__()
        if not isinstance(depths, list) or not all(isinstance(d, int) for d in depths):
            raise TypeError(f"depths must be a list of ints, got {depths!r}")
        self.depths = depths
        self.setup(dim, num_heads, True, dtype)


class ListsAndDtypeBug(ListsAndDtype):
    def scale(self) -> float:
        return (self.n_heads * self.head_dim) ** -0.5  # BUG: the model width
