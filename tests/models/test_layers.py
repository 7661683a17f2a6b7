"""The small layers against torch's own modules: LayerNorm, GELU, feed-forward, pre-norm residual."""

from __future__ import annotations

import math
import statistics

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from reference_models.layers import (
    GELU,
    FeedForwardConfig,
    LayerNorm,
    PositionwiseFeedForward,
    StdLayerNorm,
    SublayerConnection,
    gelu_tanh,
    std_layer_norm_scale,
)
from shapecheck import ConfigError, ShapeError

TOL = 1e-5


def _randomise(*modules: nn.Module) -> None:
    """Non-trivial affine parameters, the same in every module given (same parameter order)."""
    torch.manual_seed(0)
    params = [torch.randn_like(p) for p in modules[0].parameters()]
    with torch.no_grad():
        for module in modules:
            for p, value in zip(module.parameters(), params):
                p.copy_(value)


@pytest.mark.parametrize("eps", [1e-12, 1e-5])
@pytest.mark.parametrize("shape", [(2, 5, 16), (3, 16), (16,)])
def test_layer_norm_matches_torch(shape, eps):
    ours, theirs = LayerNorm(16, eps), nn.LayerNorm(16, eps=eps)
    _randomise(ours, theirs)
    x = torch.randn(shape) * 3 + 1
    assert (ours(x) - theirs(x)).abs().max() <= TOL


def test_layer_norm_gradients_match_torch():
    ours, theirs = LayerNorm(8, 1e-5), nn.LayerNorm(8, eps=1e-5)
    _randomise(ours, theirs)
    x = torch.randn(4, 8)
    ours(x).pow(2).sum().backward()
    theirs(x).pow(2).sum().backward()
    assert (ours.weight.grad - theirs.weight.grad).abs().max() <= 1e-4
    assert (ours.bias.grad - theirs.bias.grad).abs().max() <= 1e-4


def test_std_layer_norm_is_layer_norm_times_sqrt_n_minus_1_over_n():
    """With eps = 0 in both, the unbiased std makes every normalised value smaller by sqrt((n-1)/n)."""
    n = 8
    x = torch.randn(3, 5, n)
    ours = StdLayerNorm(n, eps=0.0)(x)
    theirs = nn.LayerNorm(n, eps=0.0, elementwise_affine=False)(x)
    assert (ours - std_layer_norm_scale(n) * theirs).abs().max() <= TOL
    assert std_layer_norm_scale(n) == pytest.approx(math.sqrt(7 / 8))


def test_std_layer_norm_uses_the_unbiased_std_plus_eps():
    """Against the standard library: statistics.stdev is the unbiased (n - 1) standard deviation."""
    row = [0.5, -1.0, 2.0, 3.5, -0.25, 1.0]
    norm = StdLayerNorm(6, eps=1e-3)
    got = norm(torch.tensor(row, dtype=torch.float64).float())
    mean, std = statistics.fmean(row), statistics.stdev(row)
    expected = torch.tensor([(v - mean) / (std + 1e-3) for v in row])
    assert (got - expected).abs().max() <= TOL
    assert statistics.pstdev(row) != pytest.approx(std)  # the biased std would give other values


def test_std_layer_norm_differs_from_torch_by_the_documented_factor():
    n = 8
    x = torch.randn(4, n)
    ours, theirs = StdLayerNorm(n)(x), nn.LayerNorm(n, eps=1e-6, elementwise_affine=False)(x)
    gap = (theirs - ours).abs().max().item()
    assert gap > 0.03  # not interchangeable with nn.LayerNorm at small widths
    assert gap == pytest.approx((1 - std_layer_norm_scale(n)) * theirs.abs().max().item(), rel=1e-3)


def test_gelu_is_the_tanh_approximation():
    x = torch.linspace(-8, 8, 1001)
    expected = F.gelu(x, approximate="tanh")
    assert (gelu_tanh(x) - expected).abs().max() <= TOL
    assert (GELU()(x) - expected).abs().max() <= TOL
    assert (gelu_tanh(x) - F.gelu(x)).abs().max() > 1e-4  # and not the exact erf form


@pytest.mark.parametrize(
    ("name", "peer"),
    [("gelu", nn.GELU()), ("gelu_tanh", nn.GELU(approximate="tanh")), ("relu", nn.ReLU())],
)
def test_feed_forward_matches_linear_activation_linear(name, peer):
    ffn = PositionwiseFeedForward(FeedForwardConfig(8, 32, activation=name)).eval()
    assert ffn.w_1.weight.shape == (32, 8) and ffn.w_2.weight.shape == (8, 32)
    reference = nn.Sequential(ffn.w_1, peer, ffn.w_2)
    x = torch.randn(2, 5, 8)
    out = ffn(x)
    assert out.shape == (2, 5, 8)
    assert (out - reference(x)).abs().max() <= TOL
    assert ffn(torch.randn(7, 8)).shape == (7, 8)  # position-wise: any leading axes


def test_feed_forward_dropout_acts_on_the_inner_activations():
    torch.manual_seed(0)
    ffn = PositionwiseFeedForward(FeedForwardConfig(4, 64, dropout=0.5, activation="relu")).train()
    with torch.no_grad():
        ffn.w_2.weight.fill_(1.0)
        ffn.w_2.bias.zero_()
    x = torch.randn(1, 3, 4)
    eval_out = ffn.eval()(x)
    train_outs = torch.stack([ffn.train()(x) for _ in range(200)])
    assert not torch.allclose(train_outs[0], eval_out)
    assert (train_outs.mean(0) - eval_out).abs().max() < 0.25 * eval_out.abs().max()  # inverted dropout keeps the mean


def test_wrong_width_message_is_pinned():
    ffn = PositionwiseFeedForward(FeedForwardConfig(8, 32))
    with pytest.raises(ShapeError) as info:
        ffn(torch.randn(2, 5, 6))
    assert str(info.value).splitlines()[0] == (
        "PositionwiseFeedForward.forward: x.shape[2] is 6, but d_model=8 (bound by the config)"
    )
    with pytest.raises(ShapeError, match=r"^LayerNorm.forward: x.shape\[1\] is 6, but d_model=8"):
        LayerNorm(8)(torch.randn(2, 6))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(d_model=8, d_ff=0), "FeedForwardConfig: d_ff=0 must be positive"),
        (dict(d_model=8, d_ff=32, dropout=1.0), "FeedForwardConfig: dropout=1.0 must be in [0, 1)"),
        (
            dict(d_model=8, d_ff=32, activation="swish"),
            "FeedForwardConfig: activation='swish' is not one of 'gelu', 'gelu_tanh', 'relu'",
        ),
    ],
)
def test_feed_forward_config_errors(kwargs, message):
    with pytest.raises(ConfigError) as info:
        FeedForwardConfig(**kwargs)
    assert str(info.value) == message


def test_norm_config_errors():
    with pytest.raises(ConfigError, match=r"^NormConfig: eps=-1e-06 must be a number >= 0$"):
        StdLayerNorm(8, eps=-1e-6)
    with pytest.raises(ConfigError, match=r"^NormConfig: d_model=0 must be positive$"):
        LayerNorm(0)


def test_sublayer_connection_is_pre_norm_residual():
    block = SublayerConnection(8, dropout=0.1).eval()
    _randomise(block)
    linear = nn.Linear(8, 8)
    x = torch.randn(2, 5, 8)
    assert (block(x, linear) - (x + linear(block.norm(x)))).abs().max() <= TOL
    assert torch.equal(block(x, torch.zeros_like), x)  # a zero sublayer leaves x unchanged


def test_sublayer_connection_drops_only_the_sublayer_branch():
    torch.manual_seed(0)
    block = SublayerConnection(8, dropout=0.5).train()
    x = torch.randn(4, 6, 8)
    added = block(x, torch.ones_like) - x  # dropout(1) is 0 or 1 / (1 - p) = 2
    assert set(added.round(decimals=4).unique().tolist()) == {0.0, 2.0}


def test_sublayer_connection_rejects_a_sublayer_that_changes_the_shape():
    with pytest.raises(ShapeError) as info:
        SublayerConnection(8)(torch.randn(2, 5, 8), lambda h: h[..., :1])
    assert str(info.value) == (
        "SublayerConnection.forward: the sublayer returned (2, 5, 1), but the residual adds it to x of shape (2, 5, 8)"
    )
