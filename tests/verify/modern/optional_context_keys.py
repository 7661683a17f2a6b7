"""Self- or cross-attention (``context`` optional): keys and values reshaped with the query length, fine until a context is given."""
from typing import Optional

from torch import Tensor, nn


class Fixed(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.to_q, self.to_k, self.to_v, self.to_out = (nn.Linear(dim, dim) for _ in range(4))

    def split(self, x: Tensor, length: int) -> Tensor:
        return x.reshape(x.size(0), length, self.heads, self.dim_head).transpose(1, 2)  # (batch, heads, length, dim_head)

    def key_length(self, x: Tensor, context: Tensor) -> int:
        return context.size(1)

    def forward(self, x: Tensor, context: Optional[Tensor] = None) -> Tensor:
        context = x if context is None else context
        q = self.split(self.to_q(x), x.size(1))
        k, v = (self.split(f(context), self.key_length(x, context)) for f in (self.to_k, self.to_v))
        out = (q @ k.transpose(-2, -1) * self.dim_head ** -0.5).softmax(dim=-1) @ v  # (batch, heads, seq_q, dim_head)
        return self.to_out(out.transpose(1, 2).reshape(x.size(0), x.size(1), -1))


class Attention(Fixed):
    def key_length(self, x: Tensor, context: Tensor) -> int:
        return x.size(1)  # BUG: the query's length
