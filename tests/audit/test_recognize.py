"""Every attention naming style in the table is recognised and counted against 4·d_model² + 4·d_model."""

import json

import pytest
import torch
from torch import nn

from shapecheck.auditing import audit
from shapecheck.auditing.recognize import STYLES

D = 8


def _set(module: nn.Module, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    for name in parents:
        if not hasattr(module, name):
            setattr(module, name, nn.ModuleList())
        module = getattr(module, name)
    if isinstance(module, nn.ModuleList):
        module.append(value)
    else:
        setattr(module, last, value)


def _block(style) -> nn.Module:
    block = nn.Module()
    if style.qkv == ("in_proj_weight",):
        block.in_proj_weight, block.in_proj_bias = nn.Parameter(torch.zeros(3 * D, D)), nn.Parameter(torch.zeros(3 * D))
    elif style.qkv[0].endswith("_proj_weight"):
        for name in style.qkv:
            setattr(block, name, nn.Parameter(torch.zeros(D, D)))
        block.in_proj_bias = nn.Parameter(torch.zeros(3 * D))
    elif len(style.qkv) == 1:
        _set(block, style.qkv[0], nn.Linear(D, 3 * D))
    else:
        for name in style.qkv:
            _set(block, name, nn.Linear(D, D))
    _set(block, style.outputs[0], nn.Linear(D, D))
    return block


@pytest.mark.parametrize("style", STYLES, ids=lambda s: s.label)
def test_each_style_is_an_attention_block(style):
    result = audit(_block(style))
    (component,) = result.components
    assert component.kind == "attention" and component.style == style.label
    assert component.counted == component.expected == 4 * D * D + 4 * D and component.ok
    assert not result.liveness.ran  # a bare nn.Module has no forward: reported, not a crash


def test_seed001_linear_layers_style_without_a_mask_reports_the_seed_bug():
    from typer.testing import CliRunner

    from shapecheck.cli import app

    seed = __file__.rsplit("/", 2)[0] + "/corpus/seeds/seed001_attention_constructible.py:MultiHeadedAttention"
    result = CliRunner().invoke(app, ["audit", seed, "--d-model", "32", "--heads", "4", "--format", "json"])
    assert result.exit_code == 0, result.output  # the counts are right; liveness could not run
    data = json.loads(result.stdout)
    assert data["components"][0]["style"] == "linear_layers[0..2] + output_layer (seed 001)"
    assert data["liveness"] == "not run" and data["clean"] is None and "UnboundLocalError" in data["liveness_detail"]
    assert "liveness not checked" in result.stderr and "UnboundLocalError" in result.stderr


@pytest.mark.parametrize("style", STYLES, ids=lambda s: s.label)
def test_each_style_in_the_shared_table_is_found_by_verify_too(style):
    """One table serves both commands: a family added to it is recognised by audit and by verify's reference."""
    from shapecheck.projections import STYLES as SHARED
    from shapecheck.testing.weights import find_projections, unexplained_parameters

    assert STYLES is SHARED
    block = _block(style)
    (component,) = audit(block).components
    assert component.style == style.label
    proj = find_projections(block)
    if not style.verifiable:  # interleaved heads: chunking in three would mix q, k and v
        assert proj is None
        return
    assert proj.pattern == style.pattern and not unexplained_parameters(block, proj)
    assert proj.wq.shape == proj.wk.shape == proj.wv.shape == proj.wo.shape == (D, D)
