"""Image models without a config (timm, vit-pytorch style): inputs shaped by the convolution stem."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from shapecheck.counting.tree import Settings, model_report
from shapecheck.images import image_input


class PatchViT(nn.Module):
    """A conv patch embedding, a learned position table sized for the declared image, one attention block."""

    def __init__(self, img_size: int = 32, patch: int = 8, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.img_size = img_size
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.pos = nn.Parameter(torch.zeros(1, (img_size // patch) ** 2, dim))
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2) + self.pos  # (batch, seq, dim)
        b, s, d = tokens.shape
        q, k, v = self.qkv(tokens).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)  # (batch, heads, seq, d_head)
        out = nn.functional.scaled_dot_product_attention(q, k, v)  # (batch, heads, seq, d_head)
        return self.head(out.transpose(1, 2).reshape(b, s, d).mean(1))


def _measured(model: nn.Module, image: tuple[int, int, int], batch: int) -> int:
    """FlopCounterMode on a real forward, SDPA on its math kernel (it has no formula for the CPU fused one)."""
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        model(torch.randn(batch, *image))
    return counter.get_total_flops()


def test_the_stem_and_the_declared_size_shape_the_image():
    assert image_input(PatchViT(img_size=48)) == (3, 48, 48)
    assert image_input(nn.Sequential(nn.Linear(4, 4), nn.Conv2d(3, 4, 2))) is None  # a Linear first: no image


def test_report_counts_an_image_model_as_flop_counter_mode_does():
    model = PatchViT().eval()
    report = model_report(model, "vit", Settings(batch=2, seq_len=16))
    assert report.total["flops"] == _measured(model, (3, 32, 32), batch=2)


def test_timm_vision_transformer_is_reported():
    try:
        import timm
    except Exception as error:  # noqa: BLE001 - where timm does not import
        pytest.skip(f"timm does not import here: {type(error).__name__}")
    model = timm.models.vision_transformer.VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=1,
                                                             num_heads=4, num_classes=10).eval()
    report = model_report(model, "timm", Settings(batch=2, seq_len=16))
    assert report.total["flops"] == _measured(model, (3, 32, 32), batch=2)
    assert report.total["params"] == sum(p.numel() for p in model.parameters())
