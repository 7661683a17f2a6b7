"""omihub777/ViT-CIFAR #12: MultiHeadSelfAttention divided scores by sqrt(feats), the total width, not sqrt(feats // head)."""
import torch
from torch import Tensor, nn


class Fixed(nn.Module):
    def __init__(self, feats: int, head: int = 8, dropout: float = 0.0) -> None:
        super().__init__()
        self.head, self.feats = head, feats
        self.sqrt_d = (feats // head) ** 0.5
        self.q, self.k, self.v, self.o = (nn.Linear(feats, feats) for _ in range(4))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        b, n, f = x.size()
        q = self.q(x).view(b, n, self.head, f // self.head).transpose(1, 2)
        k = self.k(x).view(b, n, self.head, f // self.head).transpose(1, 2)
        v = self.v(x).view(b, n, self.head, f // self.head).transpose(1, 2)
        score = torch.softmax(q @ k.transpose(-2, -1) / self.sqrt_d, dim=-1)  # (b, h, n, n)
        attn = (self.dropout(score) @ v).transpose(1, 2).reshape(b, n, f)
        return self.o(attn)


class Attention(Fixed):
    def __init__(self, feats: int, head: int = 8, dropout: float = 0.0) -> None:
        super().__init__(feats, head, dropout)
        self.sqrt_d = feats ** 0.5  # BUG: sqrt of the total width
