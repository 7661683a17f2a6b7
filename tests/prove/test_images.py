"""Image models (a 2-d convolution reads the input first): prove and audit feed an image, not hidden states."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor, nn

import shapecheck
from shapecheck.prove import prove


class TinyViT(nn.Module):
    """timm's layout in small: a patch convolution of a declared img_size, a class token, one Linear head."""

    def __init__(self, img_size: int = 16, patch: int = 4, dim: int = 8) -> None:
        super().__init__()
        self.img_size = img_size
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.head = nn.Linear(dim, 5)

    def forward(self, x: Tensor) -> Tensor:
        tokens = self.patch_embed(x).flatten(2).transpose(1, 2)  # (batch, patches, dim)
        tokens = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), tokens], dim=1)  # (batch, 1 + patches, dim)
        return self.head(tokens[:, 0])  # (batch, 5)


def test_prove_feeds_an_image_of_the_declared_size():
    result = prove(TinyViT().eval())
    assert result.ok and result.checked
    assert result.inputs == {"x": ["batch", 3, 16, 16]} and result.outputs == {"output": ["batch", 5]}


def test_audit_runs_liveness_on_an_image():
    result = shapecheck.audit(TinyViT())
    assert result.liveness.ran and result.clean is True


def test_timm_vit_proves_when_timm_imports():
    from tests.audit import zoo

    try:
        model = zoo.timm_vit()
    except Exception as error:  # noqa: BLE001 - timm installed without torchvision does not import
        pytest.skip(f"timm does not import here: {type(error).__name__}")
    result = prove(model.eval())
    assert result.ok and result.checked


def test_report_counts_an_image_model_as_flop_counter_mode_does():
    from torch.utils.flop_counter import FlopCounterMode

    from shapecheck.counting.tree import Settings, model_report

    torch.manual_seed(0)
    model = TinyViT()
    with FlopCounterMode(display=False) as counter:
        model(torch.randn(2, 3, 16, 16))
    report = model_report(TinyViT().to("meta"), "TinyViT", Settings(batch=2))
    assert report.total["flops"] == counter.get_total_flops() == 2 * 16 * 48 * 8 * 2 + 2 * 2 * 8 * 5
