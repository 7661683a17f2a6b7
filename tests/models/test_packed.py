"""Seed 002's packed, sequence-first attention: equal to torch's, batch-independent, unlike the seed."""

import importlib.util
from pathlib import Path

import pytest
import torch
from torch import nn

from reference_models.packed import PackedAttentionConfig, PackedMultiheadAttention
from shapecheck.errors import ConfigError, ShapeError

SEED002 = Path(__file__).resolve().parents[1] / "corpus" / "seeds" / "seed002_multihead.py"
TOL = 1e-5


def _seed_module():
    spec = importlib.util.spec_from_file_location("seed002_multihead", SEED002)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _ours(d_model=16, heads=4, **kwargs):
    torch.manual_seed(0)
    config = PackedAttentionConfig(d_model, heads, attn_dropout=0.0, out_dropout=0.0, **kwargs)
    module = PackedMultiheadAttention(config).eval()
    with torch.no_grad():
        module.in_proj_bias.normal_()  # the seed initialises it to zero; make it count
    return module


def _torch_peer(ours):
    c = ours.config
    peer = nn.MultiheadAttention(c.d_model, c.heads, dropout=0.0).eval()  # sequence-first
    with torch.no_grad():
        peer.in_proj_weight.copy_(ours.in_proj_weight)
        peer.in_proj_bias.copy_(ours.in_proj_bias)
        peer.out_proj.weight.copy_(ours.fuse_heads.weight)
        peer.out_proj.bias.copy_(ours.fuse_heads.bias)
    return peer


def _inputs(seq_q=5, seq_k=7, batch=3, d_model=16):
    g = torch.Generator().manual_seed(1)
    q, qp = (torch.randn(seq_q, batch, d_model, generator=g) for _ in range(2))
    k, v, kp = (torch.randn(seq_k, batch, d_model, generator=g) for _ in range(3))
    return q, k, v, qp, kp


def test_equals_torch_multihead_attention_plus_positions_and_shortcut():
    ours = _ours()
    peer = _torch_peer(ours)
    q, k, v, qp, kp = _inputs()
    out, weights = ours(q, k, v, query_pos=qp, key_pos=kp)
    ref, ref_weights = peer(q + qp, k + kp, v, average_attn_weights=True)
    # the shortcut is the query before positions are added
    assert (out - (ref + q)).abs().max() <= TOL
    assert (weights - ref_weights).abs().max() <= TOL
    assert weights.shape == (3, 5, 7)


def test_explicit_identity_and_per_head_weights():
    ours = _ours(average_weights=False)
    peer = _torch_peer(ours)
    q, k, v, _, _ = _inputs()
    identity = torch.randn_like(q)
    out, weights = ours(q, k, v, identity=identity)
    ref, ref_weights = peer(q, k, v, average_attn_weights=False)
    assert (out - (ref + identity)).abs().max() <= TOL
    assert weights.shape == (3, 4, 5, 7)
    assert (weights - ref_weights).abs().max() <= TOL


def test_key_padding_mask_matches_torch():
    ours = _ours()
    peer = _torch_peer(ours)
    q, k, v, _, _ = _inputs()
    pad = torch.zeros(3, 7, dtype=torch.bool)
    pad[0, 4:] = True
    pad[2, 1:] = True
    out, weights = ours(q, k, v, key_padding_mask=pad)
    ref, ref_weights = peer(q, k, v, key_padding_mask=pad)
    assert (out - (ref + q)).abs().max() <= TOL
    assert (weights - ref_weights).abs().max() <= TOL
    assert weights[0, :, 4:].abs().max() == 0


def _batch_independence_error(module, q, k, v):
    """Largest gap between item i of the batched output and item i run alone."""
    with torch.no_grad():
        together = module(q, k, v)[0]  # (seq_q, batch, d_model)
        worst = 0.0
        for i in range(q.size(1)):
            alone = module(q[:, i : i + 1], k[:, i : i + 1], v[:, i : i + 1])[0]
            worst = max(worst, (together[:, i : i + 1] - alone).abs().max().item())
    return worst


def test_batch_independence_ours_passes_and_the_seed_fails():
    """Issue 2, item 4: the seed's head merge mixes batch items; ours does not."""
    q, k, v, _, _ = _inputs(seq_q=5, seq_k=7, batch=3)
    ours = _ours()
    assert _batch_independence_error(ours, q, k, v) <= TOL

    seed = _seed_module().MultiheadAttention(16, 4, att_dropout=0.0, out_dropout=0.0).eval()
    seed.load_state_dict(ours.state_dict())  # same parameter names, same weights
    assert _batch_independence_error(seed, q, k, v) > 1e-2
    # with one batch item the two agree: the bug hides at batch 1
    q1, k1, v1 = (t[:, :1] for t in (q, k, v))
    with torch.no_grad():
        assert (seed(q1, k1, v1)[0] - ours(q1, k1, v1)[0]).abs().max() <= TOL


def test_config_errors_are_pinned():
    with pytest.raises(ConfigError, match=r"^PackedAttentionConfig: d_model=30 is not divisible by heads=4$"):
        PackedAttentionConfig(30, 4)
    with pytest.raises(ConfigError, match=r"^PackedAttentionConfig: attn_dropout=1.0 must be in \[0, 1\)$"):
        PackedAttentionConfig(32, 4, attn_dropout=1.0)


def test_shape_error_names_the_axis_bound_by_the_config():
    ours = _ours()
    q, k, v, _, _ = _inputs()
    with pytest.raises(ShapeError) as info:
        ours(q, k[..., :8], v)
    first = str(info.value).splitlines()[0]
    assert first == "PackedMultiheadAttention.forward: key.shape[2] is 8, but d_model=16 (bound by the config)"
