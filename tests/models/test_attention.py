"""MultiHeadAttention and scaled_dot_product_attention against torch's own, plus attention invariants."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from reference_models import AttentionConfig, MultiHeadAttention, scaled_dot_product_attention

TOL = 1e-5


def _copy_into_torch(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)


def _pair(d_model=16, heads=4, batch_first=True, impl="sdpa"):
    torch.manual_seed(0)
    ours = MultiHeadAttention(config=AttentionConfig(d_model, heads, impl=impl)).eval()
    theirs = nn.MultiheadAttention(d_model, heads, batch_first=batch_first).eval()
    _copy_into_torch(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize("impl", ["sdpa", "math"])
def test_matches_torch_multihead_attention_batch_first(impl):
    ours, theirs = _pair(impl=impl)
    q, kv = torch.randn(3, 5, 16), torch.randn(3, 7, 16)
    pad = torch.zeros(3, 7, dtype=torch.bool)
    pad[0, 5:] = True
    pad[2, 1:] = True
    expected, weights = theirs(q, kv, kv, key_padding_mask=pad, average_attn_weights=False)
    got, probs = ours(q, kv, kv, key_padding_mask=pad, need_weights=True)
    assert (got - expected).abs().max() <= TOL
    assert (probs - weights).abs().max() <= TOL
    assert (ours(q, kv, kv, key_padding_mask=pad) - expected).abs().max() <= TOL


def test_matches_torch_multihead_attention_sequence_first_with_causal_mask():
    ours, theirs = _pair(batch_first=False)
    x = torch.randn(6, 2, 16)  # (seq, batch, d_model)
    future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)  # True = may not attend
    expected, _ = theirs(x, x, x, attn_mask=future)
    got = ours(x.transpose(0, 1), causal=True).transpose(0, 1)
    assert (got - expected).abs().max() <= TOL


def test_scaled_dot_product_attention_matches_torch():
    torch.manual_seed(1)
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 5)
    keep = torch.rand(2, 1, 4, 6) > 0.3
    keep[..., 0] = True
    out, probs = scaled_dot_product_attention(q, k, v, keep)
    assert (out - F.scaled_dot_product_attention(q, k, v, attn_mask=keep)).abs().max() <= TOL
    assert torch.allclose(probs.sum(-1), torch.ones(2, 3, 4))


def test_general_head_sizes_count_as_seed_003_says():
    """h·d_model·(d_q + d_k + 2·d_v) weights (seed 003), plus 2·h·d_k + h·d_v + d_model biases."""
    d_model, h, d_k, d_v = 24, 3, 5, 7
    mha = MultiHeadAttention(d_model, h, d_k=d_k, d_v=d_v)
    weights = sum(p.numel() for n, p in mha.named_parameters() if n.endswith("weight"))
    biases = sum(p.numel() for n, p in mha.named_parameters() if n.endswith("bias"))
    assert weights == h * d_model * (d_k + d_k + 2 * d_v)
    assert biases == 2 * h * d_k + h * d_v + d_model
    assert mha(torch.randn(2, 3, d_model), torch.randn(2, 4, d_model)).shape == (2, 3, d_model)


@pytest.mark.parametrize("impl", ["sdpa", "math"])
def test_fully_masked_rows_give_zeros_and_finite_gradients(impl):
    mha = MultiHeadAttention(config=AttentionConfig(8, 2, bias=False, impl=impl))
    x = torch.randn(2, 3, 8, requires_grad=True)
    pad = torch.zeros(2, 3, dtype=torch.bool)
    pad[1] = True  # every key of item 1 is padding
    out = mha(x, key_padding_mask=pad)
    assert torch.equal(out[1], torch.zeros(3, 8))
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in mha.parameters())
    assert torch.isfinite(x.grad).all()


def test_sdpa_and_math_paths_agree():
    torch.manual_seed(2)
    a = MultiHeadAttention(config=AttentionConfig(12, 3, impl="sdpa"))
    b = MultiHeadAttention(config=AttentionConfig(12, 3, impl="math"))
    b.load_state_dict(a.state_dict())
    x = torch.randn(2, 5, 12)
    assert (a(x, causal=True) - b(x, causal=True)).abs().max() <= TOL


@given(
    heads=st.integers(1, 3), d_head=st.integers(1, 4), batch=st.integers(1, 3),
    seq_q=st.integers(1, 5), seq_k=st.integers(1, 5), seed=st.integers(0, 2**16),
)
def test_masked_keys_get_zero_weight_and_rows_sum_to_one(heads, d_head, batch, seq_q, seq_k, seed):
    g = torch.Generator().manual_seed(seed)
    mha = MultiHeadAttention(heads * d_head, heads)
    q = torch.randn(batch, seq_q, heads * d_head, generator=g)
    kv = torch.randn(batch, seq_k, heads * d_head, generator=g)
    pad = torch.rand(batch, seq_k, generator=g) > 0.5
    pad[:, 0] = False  # at least one visible key per row
    _, probs = mha(q, kv, kv, key_padding_mask=pad, need_weights=True)
    assert torch.all(probs.masked_select(pad[:, None, None, :].expand_as(probs)) == 0)
    assert torch.allclose(probs.sum(-1), torch.ones(batch, heads, seq_q), atol=1e-6)


@given(seq=st.integers(2, 6), t=st.integers(0, 5), seed=st.integers(0, 2**16))
def test_causal_outputs_ignore_future_tokens(seq, t, seed):
    t = t % seq
    g = torch.Generator().manual_seed(seed)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, seq, 8, generator=g)
    edited = x.clone()
    edited[:, t + 1 :] = torch.randn(2, seq - t - 1, 8, generator=g)
    assert torch.allclose(mha(x, causal=True)[:, : t + 1], mha(edited, causal=True)[:, : t + 1], atol=1e-6)
