"""prove on multi-head attention: symbolic output shapes for self- and cross-attention."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from reference_models import AttentionConfig, MultiHeadAttention
from shapecheck import ConfigError
from shapecheck.prove import prove

D_MODEL, HEADS = 16, 2


def at(shape: list, **sizes: int) -> tuple[int, ...]:
    """A proved shape at concrete sizes: ``['batch', 'seq', 16]`` with batch=2, seq=5 -> (2, 5, 16)."""
    return tuple(entry if isinstance(entry, int) else sizes[entry] for entry in shape)


@pytest.fixture(scope="module")
def self_attention():
    return prove(MultiHeadAttention(D_MODEL, HEADS))


@pytest.fixture(scope="module")
def cross_attention():
    return prove(MultiHeadAttention(D_MODEL, HEADS), cross=True)


def test_self_attention_output_is_batch_seq_d_model(self_attention):
    assert self_attention.inputs == {"query": ["batch", "seq", D_MODEL]}
    assert self_attention.output_shape == ["batch", "seq", D_MODEL]
    assert self_attention.problems == []


def test_self_attention_samples_include_size_one_and_all_pass(self_attention):
    assert self_attention.samples[0].sizes == {"batch": 1, "seq": 1}
    assert len(self_attention.samples) == 3
    assert all(sample.problem is None for sample in self_attention.samples)


def test_proved_shape_matches_eager_forward_at_untraced_sizes(self_attention):
    mha = MultiHeadAttention(D_MODEL, HEADS).eval()
    for batch, seq in [(1, 1), (2, 13), (6, 3)]:
        out = mha(torch.randn(batch, seq, D_MODEL))
        assert tuple(out.shape) == at(self_attention.output_shape, batch=batch, seq=seq)


def test_cross_attention_has_two_independent_sequence_symbols(cross_attention):
    assert cross_attention.inputs == {
        "query": ["batch", "seq_q", D_MODEL],
        "key": ["batch", "seq_k", D_MODEL],
        "value": ["batch", "seq_k", D_MODEL],
    }
    assert cross_attention.output_shape == ["batch", "seq_q", D_MODEL]
    assert not [c for c in cross_attention.constraints if "seq_q" in c and "seq_k" in c]
    assert cross_attention.ok


def test_cross_attention_samples_use_different_query_and_key_lengths(cross_attention):
    assert any(s.sizes["seq_q"] != s.sizes["seq_k"] for s in cross_attention.samples)
    mha = MultiHeadAttention(D_MODEL, HEADS).eval()
    out = mha(torch.randn(2, 9, D_MODEL), torch.randn(2, 4, D_MODEL), torch.randn(2, 4, D_MODEL))
    assert tuple(out.shape) == at(cross_attention.output_shape, batch=2, seq_q=9, seq_k=4)


def test_divisibility_is_reported_and_is_the_configs_rule(self_attention):
    assert "d_model % heads == 0" in self_attention.constraints
    with pytest.raises(ConfigError):
        AttentionConfig(d_model=D_MODEL + 1, heads=HEADS)


def test_explicit_head_width_lifts_the_divisibility_rule():
    mha = MultiHeadAttention(D_MODEL, HEADS, d_k=5, d_v=5)
    result = prove(mha, samples=1, rebuild=lambda d, h: MultiHeadAttention(d, h, d_k=5, d_v=5))
    assert result.output_shape == ["batch", "seq", D_MODEL]
    assert "d_model % heads == 0" not in result.constraints


def test_torch_multihead_attention_shapes_match_its_documentation():
    # nn.MultiheadAttention(batch_first=True) documents attn_output (N, L, E) and averaged weights (N, L, S)
    result = prove(nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True), sizes={"d_model": D_MODEL}, samples=0)
    assert result.outputs == {
        "output[0]": ["batch", "seq_q", D_MODEL],
        "output[1]": ["batch", "seq_q", "seq_k"],
    }


def test_prove_leaves_the_module_in_training_mode_it_had():
    mha = MultiHeadAttention(D_MODEL, HEADS)
    mha.train()
    prove(mha, samples=0)
    assert mha.training
