"""A Swin-style stage: one attention block per entry of ``num_heads`` (a list), residual, all at one width."""
from torch import Tensor, nn


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads, self.d_head = heads, dim // heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def merge(self, y: Tensor) -> Tensor:  # (B, nh, T, hs) -> (B, T, C)
        return y.transpose(1, 2).reshape(y.size(0), y.size(2), -1)

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, self.d_head).permute(2, 0, 3, 1, 4)  # (B, nh, T, hs) each
        probs = (q @ k.transpose(-2, -1) * self.d_head ** -0.5).softmax(dim=-1)  # (B, nh, T, T)
        return self.proj(self.merge(probs @ v))


class MergeBug(Block):
    def merge(self, y: Tensor) -> Tensor:
        return y.reshape(y.size(0), y.size(2), -1)  # BUG: heads merged without the transpose (right only for one head)


class Stage(nn.Module):
    block = Block

    def __init__(self, dim: int, num_heads: list) -> None:
        super().__init__()
        if not isinstance(num_heads, list):
            raise TypeError(f"num_heads must be a list, got {num_heads!r}")
        self.blocks = nn.ModuleList(self.block(dim, h) for h in num_heads)

    def forward(self, x: Tensor) -> Tensor:
        for block in self.blocks:
            x = x + block(x)
        return x


class StageBug(Stage):
    block = MergeBug


class StageWithDefaults(Stage):
    def __init__(self, dim: int = 8, num_heads: list = [2, 2]) -> None:  # noqa: B006 - the default is read, never mutated
        super().__init__(dim, num_heads)
