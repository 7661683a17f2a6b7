"""lucidrains/vit-pytorch #65, fixed in 85314cf: self.scale = dim ** -0.5 with dim the model width, not dim_head."""
from torch import Tensor, nn

from _styles import Steps


class Fixed(Steps):
    def __init__(self, dim: int, heads: int = 8, dim_head: int = 64, dropout: float = 0.0) -> None:
        super().__init__()
        inner = heads * dim_head
        self.heads, self.d_head, self.dropout, self.dim = heads, dim_head, dropout, dim
        self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
        self.to_out = nn.Linear(inner, dim)

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = (self.split(t) for t in self.to_qkv(x).chunk(3, dim=-1))
        return self.to_out(self.merge(self.attend(q, k, v, None)))


class Attention(Fixed):
    def scale(self):
        return self.dim ** -0.5  # BUG: the model width
