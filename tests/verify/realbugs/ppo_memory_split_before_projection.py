"""MarcoMeter/episodic-transformer-memory-ppo #22: the input was split into heads first and one head-sized projection
shared by every head, instead of projecting to all heads first."""
from typing import Optional

from torch import Tensor, nn

from _styles import Steps


class Fixed(Steps):
    def __init__(self, embed_dim: int, num_heads: int) -> None:
        super().__init__()
        self.heads, self.d_head, self.dropout = num_heads, embed_dim // num_heads, 0.0
        self.values, self.keys, self.queries = (nn.Linear(embed_dim, embed_dim, bias=False) for _ in range(3))
        self.fc_out = nn.Linear(embed_dim, embed_dim)

    def project(self, layer: nn.Linear, x: Tensor) -> Tensor:
        return self.split(layer(x))

    def forward(self, values: Tensor, keys: Tensor, query: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        q, k, v = self.project(self.queries, query), self.project(self.keys, keys), self.project(self.values, values)
        keep = None if mask is None else mask.bool()[:, None, None, :]
        return self.fc_out(self.merge(self.attend(q, k, v, keep)))


class Attention(Fixed):
    def __init__(self, embed_dim: int, num_heads: int) -> None:
        super().__init__(embed_dim, num_heads)
        d = embed_dim // num_heads
        self.values, self.keys, self.queries = (nn.Linear(d, d, bias=False) for _ in range(3))

    def project(self, layer, x):
        return layer(self.split(x))  # BUG: split first, one (d_head, d_head) projection shared by all heads
