"""PyTorch confirms what lint says without running anything: the flagged code misbehaves, the clean twin does not.

The corpus modules are imported here, by the tests; lint itself only reads them.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch
import torch.nn.functional as F

from .helpers import CORPUS, SEEDS


def _load(path):
    spec = importlib.util.spec_from_file_location(f"corpus_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _buggy(name):
    return _load(CORPUS / "buggy" / f"{name}.py")


def _clean(name):
    return _load(CORPUS / "clean" / f"{name}.py")


def _mixes_batch(module, x, dim):
    """True when changing batch item 1 of ``x`` changes output item 0."""
    other = x.clone()
    other.select(dim, 1).normal_()
    out, out2 = module(x), module(other)
    out, out2 = (out[0], out2[0]) if isinstance(out, tuple) else (out, out2)
    return not torch.allclose(out.select(dim, 0), out2.select(dim, 0), atol=1e-6)


@torch.no_grad()
def test_sc106_view_after_transpose_raises_and_the_contiguous_twin_runs():
    torch.manual_seed(0)
    buggy = _buggy("sc106_view_not_contiguous").Attention(8, 2).eval()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        buggy(torch.randn(2, 3, 8))
    clean = _clean("nanogpt_attention").CausalSelfAttention(8, 2, block_size=4).eval()
    assert clean(torch.randn(2, 3, 8)).shape == (2, 3, 8)


@torch.no_grad()
def test_sc112_seed002_mixes_batch_items_and_the_fixed_merge_does_not():
    torch.manual_seed(0)
    seed = _load(SEEDS / "seed002_multihead.py").MultiheadAttention(8, 2).eval()
    x = torch.randn(3, 2, 8)  # [tgt_len, batch, embed_dim]
    assert _mixes_batch(lambda q: seed(q, q, q), x, dim=1)
    fixed = _clean("seq_first_attention").MultiheadAttention(8, 2).eval()
    assert not _mixes_batch(lambda q: fixed(q, q, q), x, dim=1)


@torch.no_grad()
def test_sc104_merge_without_transpose_differs_from_the_fused_kernel():
    torch.manual_seed(0)
    clean = _clean("nanogpt_attention").CausalSelfAttention(8, 2, block_size=4).eval()
    buggy = _buggy("sc104_merge_without_transpose").CausalSelfAttention(8, 2).eval()
    buggy.load_state_dict({k: v for k, v in clean.state_dict().items() if k != "bias"})
    x = torch.randn(2, 4, 8)
    clean.bias.fill_(1.0)  # no causal mask, as in the buggy module
    reference = torch.nn.functional.scaled_dot_product_attention
    q, k, v = clean.c_attn(x).split(8, dim=2)
    q, k, v = (t.view(2, 4, 2, 4).transpose(1, 2) for t in (q, k, v))
    expected = clean.c_proj(reference(q, k, v).transpose(1, 2).reshape(2, 4, 8))
    assert torch.allclose(clean(x), expected, atol=1e-5)
    assert not torch.allclose(buggy(x), expected, atol=1e-3)


@torch.no_grad()
def test_sc101_softmax_over_heads_does_not_normalise_over_keys():
    torch.manual_seed(0)
    module = _buggy("sc101_softmax_axis").ClassicAttention(4)
    q = k = torch.randn(1, 2, 3, 4)
    scores = torch.matmul(q, k.transpose(-2, -1)) / 2.0
    probs = module.softmax(scores)
    assert not torch.allclose(probs.sum(-1), torch.ones(1, 2, 3))


@torch.no_grad()
def test_sc114_sdpa_dropout_stays_on_in_eval_and_the_twin_is_deterministic():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    buggy = _buggy("sc114_sdpa_dropout_always_on").FlashSelfAttention(8, 2, dropout=0.5).eval()
    assert not torch.allclose(buggy(x), buggy(x))
    clean = _clean("fused_attention").FlashSelfAttention(8, 2, dropout=0.5).eval()
    assert torch.equal(clean(x), clean(x))


@torch.no_grad()
def test_sc115_a_dropout_module_as_probability_is_rejected_by_sdpa():
    x = torch.randn(2, 5, 8)
    with pytest.raises(TypeError):
        _buggy("sc115_dropout_module_as_probability").FusedAttention(8, 2).eval()(x)
    assert _clean("fused_attention").FusedAttention(8, 2).eval()(x).shape == (2, 5, 8)


@torch.no_grad()
def test_sc116_scaling_after_softmax_breaks_the_rows_and_the_twin_matches_sdpa():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 4, 16) for _ in range(3))
    _, probs = _buggy("sc116_scaled_after_softmax").attention(q, k, v)
    assert not torch.allclose(probs.sum(-1), torch.ones(2, 3, 4))
    out, probs = _clean("annotated_attention").attention(q, k, v)
    assert torch.allclose(probs.sum(-1), torch.ones(2, 3, 4), atol=1e-6)
    assert torch.allclose(out, torch.nn.functional.scaled_dot_product_attention(q, k, v), atol=1e-5)


@torch.no_grad()
def test_sc117_mask_after_softmax_gives_non_finite_outputs_and_the_twin_matches_torch():
    torch.manual_seed(0)
    buggy = _buggy("sc117_mask_after_softmax").MultiheadAttention(8, 2).eval()
    clean = _clean("fairseq_attention").MultiheadAttention(8, 2).eval()
    clean.load_state_dict(buggy.state_dict())
    q, kv = torch.randn(3, 2, 8), torch.randn(5, 2, 8)  # time-first
    pad = torch.zeros(2, 5, dtype=torch.bool)
    pad[:, -2:] = True
    assert not torch.isfinite(buggy(q, kv, kv, key_padding_mask=pad)).all()
    peer = torch.nn.MultiheadAttention(8, 2).eval()
    peer.in_proj_weight.copy_(torch.cat([clean.q_proj.weight, clean.k_proj.weight, clean.v_proj.weight]))
    peer.in_proj_bias.copy_(torch.cat([clean.q_proj.bias, clean.k_proj.bias, clean.v_proj.bias]))
    peer.out_proj.load_state_dict(clean.out_proj.state_dict())
    expected, _ = peer(q, kv, kv, key_padding_mask=pad)
    assert torch.allclose(clean(q, kv, kv, key_padding_mask=pad), expected, atol=1e-5)


@torch.no_grad()
@pytest.mark.parametrize("function", ["tiny_negative_fill", "zero_fill"])
def test_sc118_fills_that_do_not_mask_let_masked_values_through(function):
    torch.manual_seed(0)
    q, k = torch.randn(1, 1, 3, 4), torch.randn(1, 1, 4, 4)
    v = torch.zeros(1, 1, 4, 4)
    v[..., -1, :] = 100.0  # only the masked key carries a value
    mask = torch.tensor([True, True, True, False])
    assert getattr(_buggy("sc118_fill_does_not_mask"), function)(q, k, v, mask).abs().max() > 1.0
    assert getattr(_clean("annotated_attention"), function)(q, k, v, mask).abs().max() < 1e-3


@torch.no_grad()
def test_sc119_a_layer_made_in_forward_changes_every_call_and_is_not_a_parameter():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8)
    buggy = _buggy("sc119_layer_in_forward").SelfAttention(8, 2).eval()
    assert not torch.allclose(buggy(x), buggy(x))
    assert sum(p.numel() for p in buggy.parameters()) == 8 * 24  # the output projection is not there
    clean = _clean("projection_in_init").SelfAttention(8, 2).eval()
    assert torch.equal(clean(x), clean(x))


@torch.no_grad()
def test_sc101_einsum_softmax_over_queries_and_the_einops_twin_matches_sdpa():
    torch.manual_seed(0)
    buggy = _buggy("sc101_einops_softmax_axis").Attention(8, heads=2, dim_head=4).eval()
    clean = _clean("einsum_attention").Attention(8, heads=2, dim_head=4).eval()
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(2, 5, 8)
    q, k, v = (t.view(2, 5, 2, 4).transpose(1, 2) for t in clean.to_qkv(x).chunk(3, dim=-1))
    fused = torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 5, 8)
    assert torch.allclose(clean(x), clean.to_out(fused), atol=1e-5)
    assert not torch.allclose(buggy(x), clean.to_out(fused), atol=1e-3)


@torch.no_grad()
@pytest.mark.parametrize("name,cls", [("sc104_einsum_merge", "EinsumAttention"),
                                      ("sc104_sdpa_merge_wildcard", "FlashSelfAttention")])
def test_sc104_merges_after_einsum_and_sdpa_mix_positions_and_the_twins_do_not(name, cls):
    torch.manual_seed(0)
    buggy = getattr(_buggy(name), cls)(8, 2).eval()
    clean = getattr(_clean("einsum_attention" if "einsum" in name else "fused_attention"), cls)(8, 2).eval()
    clean.load_state_dict(buggy.state_dict(), strict=False)
    x = torch.randn(1, 4, 8)
    changed = x.clone()
    changed[:, 1] += 1.0  # a later position changes: causal attention at position 0 must not see it
    if cls == "FlashSelfAttention":
        assert not torch.allclose(buggy(x)[:, 0], buggy(changed)[:, 0])  # the mixed rows carry position 1
        assert torch.allclose(clean(x)[:, 0], clean(changed)[:, 0], atol=1e-6)
    else:
        assert not torch.allclose(buggy(x), clean(x), atol=1e-3)


@torch.no_grad()
def test_sc117_an_additive_mask_after_softmax_leaks_and_the_twin_matches_sdpa():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    additive = torch.zeros(1, 1, 1, 5)
    additive[..., -2:] = torch.finfo(torch.float32).min  # the last two keys are padding
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    assert torch.allclose(_clean("fairseq_attention").additive_mask_after_softmax(q, k, v, additive), expected, atol=1e-5)
    assert not torch.isfinite(_buggy("sc117_mask_after_softmax").additive_mask_after_softmax(q, k, v, additive)).all()


@torch.no_grad()
def test_sc120_a_minus_1e9_fill_raises_in_float16_and_the_finfo_twin_runs():
    torch.manual_seed(0)
    x, mask = torch.randn(2, 3, 8).half(), torch.tensor([1, 1, 0])
    with pytest.raises(RuntimeError, match="overflow"):
        _buggy("sc120_fill_overflows_half").half_model(8, 2)(x, mask)
    out = _clean("half_attention").half_model(8, 2)(x, mask)
    assert out.shape == (2, 3, 8) and torch.isfinite(out).all()


@torch.no_grad()
@pytest.mark.parametrize("method", ["forward", "forward_unsqueezed"])
def test_sc121_a_padding_mask_on_the_query_axis_lets_padded_keys_through_and_the_twin_does_not(method):
    torch.manual_seed(0)
    x, memory = torch.randn(1, 3, 8), torch.randn(1, 3, 8)
    pad = torch.tensor([[False, False, True]])  # the last key is padding
    other = memory.clone()
    other[:, -1].normal_()  # only the padded key changes

    def first_query(cls, mem):
        return getattr(cls, method)(x, mem, pad)[:, 0]

    buggy = _buggy("sc121_padding_mask_on_queries").CrossAttention(8, 2).eval()
    assert not torch.allclose(first_query(buggy, memory), first_query(buggy, other))
    with pytest.raises(RuntimeError):
        getattr(buggy, method)(torch.randn(1, 4, 8), memory, pad)  # seq_q != seq_k: no broadcast
    clean = _clean("cross_attention_padding").CrossAttention(8, 2).eval()
    assert torch.allclose(first_query(clean, memory), first_query(clean, other))
    assert clean(torch.randn(1, 4, 8), memory, pad).shape == (1, 4, 8)


@torch.no_grad()
def test_sc113_keys_viewed_with_the_query_input_shape_fail_or_mix_positions_and_the_twin_does_not():
    torch.manual_seed(0)
    buggy = _buggy("sc113_input_shape_cross_attention").CrossAttention(8, 2).eval()
    clean = _clean("hf_cross_attention").CrossAttention(8, 2).eval()
    clean.load_state_dict(buggy.state_dict())
    with pytest.raises(RuntimeError, match="invalid for input of size"):
        buggy(torch.randn(2, 3, 8), torch.randn(2, 5, 8))
    assert clean(torch.randn(2, 3, 8), torch.randn(2, 5, 8)).shape == (2, 3, 8)
    x, memory = torch.randn(2, 4, 8), torch.randn(2, 2, 8)  # 4 queries, 2 keys: the view runs and is wrong
    assert not torch.allclose(buggy(x, memory), clean(x, memory), atol=1e-4)


@torch.no_grad()
@pytest.mark.parametrize("cls", ["SelfAttention", "Attention"])
def test_sc122_scores_scaled_by_the_head_count_differ_from_sdpa_and_the_twins_match(cls):
    torch.manual_seed(0)
    sizes = (16, 2) if cls == "SelfAttention" else (16, 2, 8)  # width 16, 2 heads of 8
    buggy = getattr(_buggy("sc122_heads_scaled_scores"), cls)(*sizes).eval()
    clean = getattr(_clean("temperature_attention"), cls)(*sizes).eval()
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(2, 5, 16)
    reference = clean(x)
    assert not torch.allclose(buggy(x), reference, atol=1e-4)
    inner = clean.qkv if cls == "SelfAttention" else clean.to_qkv
    out = clean.out if cls == "SelfAttention" else clean.to_out
    q, k, v = (t.reshape(2, 5, 2, -1).transpose(1, 2) for t in inner(x).chunk(3, dim=-1))
    fused = torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 5, -1)
    torch.testing.assert_close(reference, out(fused), atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_sc103_a_temperature_of_the_model_width_passed_to_another_class_differs_from_d_k():
    torch.manual_seed(0)
    buggy = _buggy("sc122_heads_scaled_scores").MultiHeadAttention(2, 16, 8, 8).eval()
    clean = _clean("temperature_attention").MultiHeadAttention(2, 16, 8, 8).eval()
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(2, 5, 16)
    (out, _), (ref, _) = buggy(x, x, x), clean(x, x, x)
    assert not torch.allclose(out, ref, atol=1e-4)
    q, k, v = (w(x).view(2, 5, 2, 8).transpose(1, 2) for w in (clean.w_qs, clean.w_ks, clean.w_vs))
    fused = torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 5, -1)
    torch.testing.assert_close(ref, clean.fc(fused), atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_sc103_one_head_scaled_by_the_input_width_differs_from_sdpa_and_the_twin_matches_it():
    torch.manual_seed(0)
    buggy = _buggy("sc103_one_head_scaled_by_width").Head(16, 4, 8).eval()
    clean = _clean("one_head_scaled_by_its_size").Head(16, 4, 8).eval()
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(2, 5, 16)
    q, k, v = clean.query(x), clean.key(x), clean.value(x)
    fused = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(clean(x), fused, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(buggy(x), fused, atol=1e-3)


@torch.no_grad()
def test_sc183_each_unbound_read_raises_on_its_path_and_the_twin_runs():
    torch.manual_seed(0)
    buggy, clean = _buggy("sc183_unbound_on_a_path"), _clean("bound_on_every_path")
    q = k = v = torch.randn(1, 2, 3, 8)
    with pytest.raises(UnboundLocalError):
        buggy.chunked_attention(q, k, v)
    torch.testing.assert_close(clean.chunked_attention(q, k, v), F.scaled_dot_product_attention(q, k, v))
    with pytest.raises(UnboundLocalError):
        buggy.GroupedBlock(8, 2, kv_heads=1)
    assert clean.GroupedBlock(8, 2, kv_heads=1).kv.out_features == 2 * 1 * 4
    text, image = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    with pytest.raises(UnboundLocalError):
        buggy.TwoStreamEncoder(8, 2).eval()(text, image)
    assert clean.TwoStreamEncoder(8, 2).eval()(text, image).shape == (2, 3, 8)
    with pytest.raises(UnboundLocalError):
        buggy.rotated_decode_step(q, k, v)  # the default skips the if that binds cos and sin
    torch.testing.assert_close(clean.rotated_decode_step(q, k, v), F.scaled_dot_product_attention(q, k, v))


def test_sc184_a_repeated_module_is_one_layer_with_one_set_of_weights_and_the_twin_has_one_per_layer():
    torch.manual_seed(0)
    buggy = _buggy("sc184_module_repeated").Encoder(8, 2, depth=3)
    clean = _clean("module_per_layer").Encoder(8, 2, depth=3)
    assert buggy.layers[0] is buggy.layers[2] and buggy.refiners[0] is buggy.refiners[1]
    per_block = sum(p.numel() for p in buggy.layers[0].parameters())
    assert sum(p.numel() for p in buggy.layers.parameters()) == per_block  # three layers, one block's weights
    assert sum(p.numel() for p in clean.layers.parameters()) == 3 * per_block
    with torch.no_grad():
        buggy.layers[0].norm.weight.fill_(2.0)
        clean.layers[0].norm.weight.fill_(2.0)
    assert torch.equal(buggy.layers[2].norm.weight, buggy.layers[0].norm.weight)  # an update to one is to all
    assert not torch.equal(clean.layers[2].norm.weight, clean.layers[0].norm.weight)


@torch.no_grad()
def test_sc104_a_merge_of_the_asserted_heads_layout_mixes_positions_and_the_twin_does_not():
    torch.manual_seed(0)
    buggy = _buggy("sc104_merge_after_shape_assert").CheckpointedAttention(8, 2).eval()
    clean = _clean("checkpointed_attention").CheckpointedAttention(8, 2).eval()
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(2, 4, 8)
    assert not torch.allclose(buggy(x), clean(x), atol=1e-4)
    q, k, v = clean.qkv(x).view(2, 4, 3, 2, 4).permute(2, 0, 3, 1, 4)
    fused = torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 4, 8)
    torch.testing.assert_close(clean(x), clean.out_proj(fused), atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_sc123_cosine_scores_without_a_temperature_cannot_sharpen_and_the_logit_scaled_twin_can():
    torch.manual_seed(0)
    n = 16
    buggy = _buggy("sc123_untempered_cosine_scores").WindowAttention(8, 2).eval()
    clean = _clean("cosine_attention").WindowAttention(8, 2).eval()
    clean.load_state_dict(buggy.state_dict(), strict=False)  # the twin adds its logit scale
    with torch.no_grad():
        clean.logit_scale.fill_(torch.log(torch.tensor(100.0)))
        buggy.qkv.weight.mul_(1000)  # larger projections: cosine similarities do not change
        clean.qkv.weight.mul_(1000)
    x = torch.randn(2, n, 8)
    bound = torch.e ** 2 / (torch.e ** 2 + n - 1)  # weights in [e^-1, e^1] before normalising
    _, weights = buggy(x)
    assert weights.max() <= bound + 1e-6
    _, sharp = clean(x)
    assert sharp.max() > 0.9


@torch.no_grad()
def test_sc123_unit_queries_and_keys_into_sdpa_stay_near_uniform():
    torch.manual_seed(0)
    buggy = _buggy("sc123_untempered_cosine_scores").NormedAttention(8, 2).eval()
    x = torch.randn(1, 16, 8)
    q, k, v = (t.reshape(1, 16, 2, -1).transpose(1, 2) for t in buggy.to_qkv(x).chunk(3, dim=-1))
    q, k = torch.nn.functional.normalize(q, dim=-1), torch.nn.functional.normalize(k, dim=-1)
    weights = ((q @ k.transpose(-1, -2)) / 2).softmax(dim=-1)  # SDPA's default scale, 1/sqrt(d_head = 4)
    torch.testing.assert_close(buggy(x), buggy.to_out((weights @ v).transpose(1, 2).reshape(1, 16, 8)))
    assert weights.max() <= torch.e / (torch.e + 15) + 1e-6  # scores within [-1/2, 1/2]: at most e / (e + 15)


@torch.no_grad()
@pytest.mark.parametrize("cls", ["MultiHeadAttention", "PerceiverAttention"])
def test_sc124_one_sided_quarter_scaling_is_d_head_to_the_minus_quarter_and_the_twin_matches_sdpa(cls):
    torch.manual_seed(0)
    args = (16, 2) if cls == "MultiHeadAttention" else (16, 8, 2)  # width 16, 2 heads of 8
    buggy = getattr(_buggy("sc124_half_scaled_scores"), cls)(*args).eval()
    clean = getattr(_clean("quarter_scaled_attention"), cls)(*args).eval()
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(2, 5, 16)
    if cls == "MultiHeadAttention":
        q, k, v = (p(x).view(2, 5, 2, 8).transpose(1, 2) for p in (clean.query, clean.key, clean.value))
        out = clean.out
    else:
        q = clean.to_q(x).reshape(2, 5, 2, 8).transpose(1, 2)
        k, v = (t.reshape(2, 5, 2, 8).transpose(1, 2) for t in clean.to_kv(x).chunk(2, dim=-1))
        out = clean.to_out
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def attend(scale):
        return out(sdpa(q, k, v, scale=scale).transpose(1, 2).reshape(2, 5, 16))

    torch.testing.assert_close(clean(x), attend(8 ** -0.5), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(buggy(x), attend(8 ** -0.25), atol=1e-5, rtol=1e-5)
    assert not torch.allclose(buggy(x), clean(x), atol=1e-4)


@torch.no_grad()
def test_sc134_linear_attention_multiplied_by_its_normaliser_is_no_weighted_mean_and_the_twin_is():
    # the reference: causal attention with weights q_i·k_j (positive features) normalised over j <= i
    torch.manual_seed(0)
    q, k, v = torch.rand(2, 5, 4), torch.rand(2, 5, 4), torch.randn(2, 5, 3)
    weights = (q @ k.transpose(-1, -2)).tril()
    reference = (weights / weights.sum(dim=-1, keepdim=True)) @ v
    clean, buggy = _clean("sc134_normaliser_multiplied"), _buggy("sc134_normaliser_multiplied")
    assert torch.allclose(clean.causal_linear_attention(q, k, v, eps=0.0), reference, atol=1e-5)
    assert not torch.allclose(buggy.causal_linear_attention(q, k, v, eps=0.0), reference, atol=1e-2)
    full = q @ k.transpose(-1, -2)
    assert torch.allclose(clean.linear_attention(q, k, v), (full / full.sum(-1, keepdim=True)) @ v, atol=1e-5)
    assert not torch.allclose(buggy.linear_attention(q, k, v), (full / full.sum(-1, keepdim=True)) @ v, atol=1e-2)


@torch.no_grad()
def test_sc135_the_attention_mask_given_as_key_padding_lets_padded_frames_in_and_the_twin_keeps_them_out():
    torch.manual_seed(0)
    buggy = _buggy("sc135_mask_parameter_unread").DownsampledEncoder(8, 2, 2).eval()
    clean = _clean("sc135_mask_parameter_unread").DownsampledEncoder(8, 2, 2).eval()
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(4, 8, 8)
    mask = torch.zeros(8, 8, dtype=torch.bool)  # every frame may attend every other
    padding = torch.zeros(4, 8, dtype=torch.bool)
    padding[:, 6:] = True  # the last two frames are padding
    changed = x.clone()
    changed[:, 6:] = torch.randn(4, 2, 8)  # what a padded frame holds must not matter
    for module, padded_frames_matter in ((clean, False), (buggy, True)):
        out, out2 = module(x, mask, padding), module(changed, mask, padding)
        assert torch.allclose(out[:, :6], out2[:, :6], atol=1e-5) != padded_frames_matter


def _heads(t, heads):
    b, n, d = t.shape
    return t.view(b, n, heads, d // heads).transpose(1, 2)


@torch.no_grad()
def test_sc150_arguments_in_another_order_attend_with_the_keys_as_queries_and_the_twin_matches_sdpa():
    torch.manual_seed(0)
    buggy = _buggy("sc150_arguments_out_of_order").CrossAttention(8, 2)
    clean = _clean("sc150_arguments_out_of_order").CrossAttention(8, 2)
    clean.load_state_dict(buggy.state_dict())
    x, context = torch.randn(2, 3, 8), torch.randn(2, 3, 8)
    q, k, v = (_heads(p(t), 2) for p, t in ((clean.to_q, x), (clean.to_k, context), (clean.to_v, context)))
    reference = clean.to_out(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 3, 8))
    torch.testing.assert_close(clean(x, context), reference, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(buggy(x, context), reference, atol=1e-3)
    with pytest.raises(RuntimeError):
        buggy(x, torch.randn(2, 5, 8))  # a context of another length: the swapped einsum cannot even run
    assert clean(x, torch.randn(2, 5, 8)).shape == (2, 3, 8)
    llama = _clean("sc150_arguments_out_of_order").LlamaStyleAttention(8, 2)
    swapped = _buggy("sc150_arguments_out_of_order").LlamaStyleAttention(8, 2)
    swapped.load_state_dict(llama.state_dict())
    x = torch.randn(2, 4, 8)
    reference = torch.nn.MultiheadAttention(8, 2, bias=False, batch_first=True)
    reference.in_proj_weight.copy_(torch.cat([llama.q_proj.weight, llama.k_proj.weight, llama.v_proj.weight]))
    reference.out_proj.weight.copy_(llama.o_proj.weight)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4)
    expected, _ = reference(x, x, x, attn_mask=causal, need_weights=False)
    torch.testing.assert_close(llama(x), expected, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(swapped(x), expected, atol=1e-3)
    mask = torch.zeros(1, 1, 32, 64, dtype=torch.bool)  # the kernel's batching asked with b and sq swapped
    assert _buggy("sc150_arguments_out_of_order").FusedScaleMaskSoftmax(1.0).is_kernel_available(mask, 1, 2, 32, 64) \
        != _clean("sc150_arguments_out_of_order").FusedScaleMaskSoftmax(1.0).is_kernel_available(mask, 1, 2, 32, 64)


@torch.no_grad()
def test_sc151_a_cache_lookup_with_a_computed_default_projects_on_every_step_and_the_twin_once():
    torch.manual_seed(0)
    for name, call in (("MultiHeadAttention", lambda m, x, xa, cache: m(x, xa, cache)),
                       ("DecoderCrossAttention", lambda m, x, xa, cache: m(x, xa, cache))):
        counts = {}
        for kind, load in (("buggy", _buggy), ("clean", _clean)):
            module = getattr(load("sc151_cache_default_evaluated"), name)(8, 2)
            projection = module.key if name == "MultiHeadAttention" else module.kv_proj
            calls = []
            projection.register_forward_hook(lambda *_: calls.append(1))
            cache = {}
            if name == "MultiHeadAttention":  # whisper fills the cache through hooks; here: once, by hand
                xa = torch.randn(1, 6, 8)
                cache[module.key], cache[module.value] = module.key(xa), module.value(xa)
                calls.clear()
            xa = torch.randn(1, 6, 8)
            outs = [call(module, torch.randn(1, 1, 8), xa, cache) for _ in range(3)]
            assert all(o.shape == (1, 1, 8) for o in outs)
            counts[kind] = len(calls)
        assert counts["buggy"] == 3 and counts["clean"] == (0 if name == "MultiHeadAttention" else 1), (name, counts)


@torch.no_grad()
def test_sc152_an_index_copy_into_a_cache_of_another_dtype_raises_and_the_twin_writes():
    torch.manual_seed(0)
    shape = (1, 2, 6, 4)
    k, v = torch.randn(1, 2, 1, 4, dtype=torch.bfloat16), torch.randn(1, 2, 1, 4, dtype=torch.bfloat16)
    pos = torch.tensor([2])
    buggy = _buggy("sc152_cache_dtype_unmatched").KVCache(shape, shape)
    clean = _clean("sc152_cache_dtype_unmatched").KVCache(shape, shape)
    with pytest.raises(RuntimeError, match="dtype"):
        buggy(pos, k, v)
    ck, cv = clean(pos, k, v)
    assert torch.equal(ck[:, :, 2:3], k) and torch.equal(cv[:, :, 2:3], v)
    # the attention variant under CPU autocast: bfloat16 projections into float32 caches
    for kind, load in (("buggy", _buggy), ("clean", _clean)):
        module = load("sc152_cache_dtype_unmatched").CausalSelfAttention(8, 2)
        cache = (torch.zeros(1, 2, 6, 4), torch.zeros(6, 1, 2, 4))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            if kind == "buggy":
                with pytest.raises(RuntimeError):
                    module(torch.randn(1, 1, 8), pos, cache)
            else:
                out, _ = module(torch.randn(1, 1, 8), pos, cache)
                assert out.shape == (1, 1, 8)


@torch.no_grad()
def test_sc153_a_mask_reshaped_twice_fails_or_breaks_the_shape_and_the_twin_matches_its_sdpa_path():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 16)
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[0, 3:] = False
    buggy = _buggy("sc153_reshaped_twice").Attention(16, heads=2, dim_head=8, use_flash_attn=False)
    clean = _clean("sc153_reshaped_twice").Attention(16, heads=2, dim_head=8, use_flash_attn=False)
    clean.load_state_dict(buggy.state_dict())
    with pytest.raises(Exception, match="(?i)rearrange|shape|dimension"):
        buggy(x, mask)
    clean.use_flash_attn = False
    eager = clean(x, mask)
    clean.use_flash_attn = True
    torch.testing.assert_close(eager, clean(x, mask), atol=1e-5, rtol=1e-5)
    bert_buggy = _buggy("sc153_reshaped_twice").BertSelfAttention(16, 2)
    bert_clean = _clean("sc153_reshaped_twice").BertSelfAttention(16, 2)
    bert_clean.load_state_dict(bert_buggy.state_dict())
    reference = bert_clean(x, mask.long(), use_sdpa=True)
    torch.testing.assert_close(bert_clean(x, mask.long()), reference, atol=1e-5, rtol=1e-5)
    try:
        wrong = bert_buggy(x, mask.long())
    except RuntimeError:
        return  # the six-axis mask broke the product: the bug shows as an error
    assert wrong.shape != reference.shape or not torch.allclose(wrong, reference, atol=1e-4)


@torch.no_grad()
def test_sc154_keys_expanded_to_the_queries_shape_fail_with_longer_keys_and_the_twin_matches_sdpa():
    torch.manual_seed(0)
    q = torch.randn(2, 4, 3, 8)
    k, v = torch.randn(2, 7, 8), torch.randn(2, 7, 8)  # single-headed, longer than the queries (memory key/values)
    buggy = _buggy("sc154_keys_expanded_to_queries").Attend()
    clean = _clean("sc154_keys_expanded_to_queries").Attend()
    with pytest.raises(RuntimeError):
        buggy(q, k, v)
    reference = F.scaled_dot_product_attention(q, k[:, None].expand(2, 4, 7, 8), v[:, None].expand(2, 4, 7, 8))
    torch.testing.assert_close(clean(q, k, v), reference)
    buggy_mqa = _buggy("sc154_keys_expanded_to_queries").MultiQueryAttention(16, 4)
    clean_mqa = _clean("sc154_keys_expanded_to_queries").MultiQueryAttention(16, 4)
    clean_mqa.load_state_dict(buggy_mqa.state_dict())
    past = (torch.randn(1, 1, 4, 4), torch.randn(1, 1, 4, 4))
    x = torch.randn(1, 1, 16)
    with pytest.raises(RuntimeError):
        buggy_mqa(x, past)
    out, (k_all, _) = clean_mqa(x, past)
    assert out.shape == (1, 1, 16) and k_all.shape[2] == 5


@torch.no_grad()
def test_sc155_a_rotary_table_sliced_from_zero_decodes_differently_from_the_full_pass_and_the_twin_does_not():
    torch.manual_seed(0)
    positions = torch.arange(8.0)[:, None] * torch.tensor([1.0, 0.1])[None]  # 8 positions, head size 4
    angles = torch.cat((positions, positions), dim=-1)
    x = torch.randn(1, 5, 8)
    weights = None
    for kind, load in (("clean", _clean), ("buggy", _buggy)):
        module = load("sc155_rotary_without_offset").CachedSelfAttention(8, 2, 8)
        module.cos.copy_(angles.cos())
        module.sin.copy_(angles.sin())
        if weights is None:
            weights = module.state_dict()
        module.load_state_dict(weights)  # the same weights in both
        full, _ = module(x)
        _, past = module(x[:, :4])
        step, _ = module(x[:, 4:], past)  # the fifth token decoded with the first four in the cache
        assert torch.allclose(step[:, 0], full[:, 4], atol=1e-5) == (kind == "clean")


@torch.no_grad()
def test_sc156_a_setting_not_passed_on_leaves_the_inner_module_at_its_default_and_the_twin_follows_it():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    for kind, load in (("buggy", _buggy), ("clean", _clean)):
        module = load("sc156_setting_not_forwarded")
        transformer = module.Transformer(8, depth=1, heads=2, use_flash_attn=False)
        assert transformer.layers[0].use_flash_attn is (kind == "buggy")  # the caller asked for the eager path
        decoder = module.Decoder(8, 2, n_layers=1, causal=True)
        changed = x.clone()
        changed[:, -1] = torch.randn(2, 8)  # a later token must not change an earlier one in causal attention
        earlier_moved = not torch.allclose(decoder(x)[:, 0], decoder(changed)[:, 0], atol=1e-6)
        assert earlier_moved == (kind == "buggy")



def test_sc172_sdpa_given_seq_first_queries_attends_across_heads_and_the_transposing_twin_does_not(monkeypatch):
    # both files import flash_attn at the top; with fused=False they pick SDPA, so a stand-in module that is
    # never called lets them load where flash_attn is not installed
    import sys
    import types

    monkeypatch.setitem(sys.modules, "flash_attn", types.SimpleNamespace(flash_attn_func=None))
    buggy, clean = _buggy("sc172_kernel_layout"), _clean("kernel_layouts")
    torch.manual_seed(0)
    wrong = buggy.Attention(32, 4).eval()
    right = clean.Attention(32, 4, rotary=lambda q, k, v: (q, k, v)).eval()
    right.load_state_dict(wrong.state_dict())
    x = torch.randn(2, 6, 32)
    q, k, v = right.in_proj(x).chunk(3, dim=-1)
    q, k, v = (t.view(2, 6, 4, 8).transpose(1, 2) for t in (q, k, v))
    expected = right.out_proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(2, 6, 32))
    with torch.no_grad():
        assert torch.allclose(right(x), expected, atol=1e-6)
        assert not torch.allclose(wrong(x), expected, atol=1e-3)
        # the buggy path attends across the heads of one position, never across positions: a change at the first
        # position does not reach the last one, which the causal attention of the twin does
        earlier = x.clone()
        earlier[:, 0] += 1.0
        assert torch.allclose(wrong(x)[:, -1], wrong(earlier)[:, -1], atol=1e-6)
        assert not torch.allclose(right(x)[:, -1], right(earlier)[:, -1], atol=1e-6)


def test_sc173_a_bias_filled_with_the_mask_and_not_passed_on_is_lost_and_the_twin_applies_it():
    buggy, clean = _buggy("sc173_mask_applied_to_nothing").Attend(), _clean("masks_applied").Attend()
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 5, 8) for _ in range(3))
    bias = torch.randn(1, 2, 5, 5) * 4
    mask = torch.ones(1, 1, 1, 5, dtype=torch.bool)
    mask[..., -1] = False
    without_bias = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    with_bias = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.masked_fill(~mask, -torch.finfo(q.dtype).max))
    assert torch.allclose(buggy(q, k, v, mask=mask, attn_bias=bias), without_bias, atol=1e-6)  # the bias is lost
    assert torch.allclose(clean(q, k, v, mask=mask, attn_bias=bias), with_bias, atol=1e-6)
    assert not torch.allclose(with_bias, without_bias, atol=1e-3)


def test_sc173_structured_dropout_after_the_call_changes_nothing_and_the_twin_narrows_the_mask():
    seen = []
    transformer = lambda ids, self_attn_mask: seen.append(self_attn_mask.clone()) or ids  # noqa: E731
    ids = torch.ones(2, 6, dtype=torch.long)  # no padding: every key may be attended to
    torch.manual_seed(0)
    _buggy("sc173_mask_applied_to_nothing").Wrapper(transformer, mask_prob=0.5).train()(ids)
    torch.manual_seed(0)
    _clean("masks_applied").Wrapper(transformer, mask_prob=0.5).train()(ids)
    assert bool(seen[0].all()) and not bool(seen[1].all())  # only the twin hands a narrowed mask to the call


@torch.no_grad()
def test_sc175_a_boolean_mask_given_a_large_negative_masks_nothing_and_the_twin_masks():
    torch.manual_seed(0)
    buggy = _buggy("sc175_bool_mask_filled")
    clean = _clean("binary_masks_built_right")
    x = torch.randn(1, 4, 8)
    future = torch.ones(4, 4, dtype=torch.bool).triu(1)
    bad, good = buggy.SelfAttention(8, 2), clean.SelfAttention(8, 2)
    good.load_state_dict(bad.state_dict())
    changed = x.clone()
    changed[:, -1] += 1.0  # only the last position changes: under a causal mask, query 0 must not see it
    assert not torch.allclose(bad(x, future)[:, 0], bad(changed, future)[:, 0], atol=1e-6)
    assert torch.allclose(good(x, future)[:, 0], good(changed, future)[:, 0], atol=1e-6)
    q, k, v = torch.randn(3, 1, 1, 4, 8).unbind(0)
    masked = torch.zeros(1, 1, 4, 4, dtype=torch.bool)
    masked[..., -1] = True
    other = v.clone()
    other[..., -1, :] += 1.0
    assert not torch.allclose(buggy.core_attention(q, k, v, masked), buggy.core_attention(q, k, other, masked))
    assert torch.allclose(clean.core_attention(q, k, v, masked), clean.core_attention(q, k, other, masked))


@torch.no_grad()
def test_sc176_a_0_1_mask_added_or_given_to_sdpa_lets_masked_keys_in_and_the_twin_keeps_them_out():
    torch.manual_seed(0)
    buggy, clean = _buggy("sc176_binary_mask_added"), _clean("binary_masks_built_right")
    q, k, v = torch.randn(3, 1, 1, 4, 8).unbind(0)
    masked = torch.zeros(1, 1, 4, 4, dtype=torch.bool)
    masked[..., -1] = True
    other = v.clone()
    other[..., -1, :] += 1.0
    run = lambda mod, values: mod.glm_core_attention(q, k, values, masked)  # noqa: E731
    assert not torch.allclose(run(buggy, v), run(buggy, other)) and torch.allclose(run(clean, v), run(clean, other))
    x, cond = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    padded = cond.clone()
    padded[:, 3:] += 1.0  # beyond each sample's length: padding the attention must not read
    lengths = [3, 3]
    torch.manual_seed(1)
    bad = buggy.CrossAttention(8, 2)
    good = clean.CrossAttention(8, 2)
    good.load_state_dict(bad.state_dict())
    assert not torch.allclose(bad(x, cond, lengths), bad(x, padded, lengths), atol=1e-6)
    assert torch.allclose(good(x, cond, lengths), good(x, padded, lengths), atol=1e-6)
    ids = torch.tensor([[5, 6, 0]])
    qh, kh = torch.randn(2, 1, 2, 3, 4).unbind(0)
    assert buggy.encoder_scores(qh, kh, ids).softmax(-1)[..., -1].min() > 0.01
    assert clean.encoder_scores(qh, kh, ids).softmax(-1)[..., -1].max() < 1e-3
    future = torch.ones(3, 3, dtype=torch.bool).triu(1)
    assert buggy.causal_scores(qh, kh).softmax(-1)[..., future].min() > 1e-6  # the future keeps a share
    assert clean.causal_scores(qh, kh).softmax(-1)[..., future].max() == 0


def test_sc177_one_minus_a_boolean_mask_raises_and_the_twin_inverts_it():
    buggy, clean = _buggy("sc177_bool_mask_subtracted"), _clean("binary_masks_built_right")
    scores, ids = torch.randn(1, 2, 3, 3), torch.tensor([[5, 6, 0]])
    with pytest.raises(RuntimeError, match="Subtraction"):
        buggy.masked_scores(scores, ids)
    with pytest.raises(RuntimeError, match="Subtraction"):
        buggy.attend(scores, torch.tensor([2]))
    assert clean.masked_scores(scores, ids).softmax(-1)[..., -1].max() < 1e-3
    assert clean.attend(scores, torch.tensor([2]))[..., -1].max() == 0


@torch.no_grad()
def test_sc140_a_square_bias_fails_once_the_module_attends_longer_memory_and_self_attention_only_fits():
    buggy = _buggy("sc140_square_bias_given_memory").DecoderLayer(8, 2)
    with pytest.raises(RuntimeError, match="size of tensor"):
        buggy(torch.randn(1, 3, 8), torch.randn(1, 5, 8))
    assert _clean("square_bias_in_self_attention").EncoderLayer(8, 2)(torch.randn(1, 3, 8)).shape == (1, 3, 8)


@torch.no_grad()
def test_sc178_a_tuple_cache_grown_by_item_raises_and_the_twin_replaces_it():
    torch.manual_seed(0)
    buggy = _buggy("sc178_tuple_item_assigned").CachedAttention(8, 2, block=4)
    buggy(torch.randn(1, 3, 8))  # fits the first allocation
    with pytest.raises(TypeError, match="does not support item assignment"):
        buggy(torch.randn(1, 3, 8))
    clean = _clean("tuple_cache_replaced").CachedAttention(8, 2, block=4)
    clean(torch.randn(1, 3, 8))
    assert clean(torch.randn(1, 3, 8)).shape == (1, 3, 8) and clean.kv_cache[0].shape[2] == 8


@torch.no_grad()
def test_sc109_a_padding_mask_read_as_a_keep_mask_by_the_callee_hides_the_real_tokens_and_the_twin_sees_them():
    torch.manual_seed(0)
    buggy = _buggy("sc109_convention_from_callers").Retriever(11, 8)
    clean = _clean("mask_convention_from_callers").Retriever(11, 8)
    clean.load_state_dict(buggy.state_dict())
    tokens = torch.tensor([[5, 7, 0, 0]])
    other = torch.tensor([[5, 3, 0, 0]])  # only the second real token changes
    assert torch.allclose(buggy(tokens)[0, 0], buggy(other)[0, 0])  # the first token never sees the second
    assert not torch.allclose(clean(tokens)[0, 0], clean(other)[0, 0], atol=1e-6)


def test_sc179_a_misspelled_tensor_method_raises_on_its_path_and_the_twin_runs():
    torch.manual_seed(0)
    buggy, clean = _buggy("sc179_tensor_method_misspelled"), _clean("tensor_methods_spelled")
    x = torch.randn(2, 5, 8)
    mask = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    attention = buggy.Attention(8)
    attention(x)  # without a mask the misspelled call is never reached
    with pytest.raises(AttributeError, match="mask_fill"):
        attention(x, mask)
    with pytest.raises(AttributeError, match="mask_fill_"):
        buggy.prefill_mask([2, 3], [4, 6])
    twin = clean.Attention(8)
    twin.load_state_dict(attention.state_dict())
    assert torch.allclose(twin(x, mask), attention(x), atol=1e-6)  # an all-True keep mask changes nothing
    built = clean.prefill_mask([2, 3], [4, 6])
    assert built.shape == (5, 6) and (built[:2, 2:4] == torch.tensor([[0.0, -10000.0], [0.0, 0.0]])).all()


@torch.no_grad()
def test_sc181_a_mask_read_both_ways_makes_the_two_paths_disagree_and_the_twin_agrees():
    torch.manual_seed(0)
    buggy = _buggy("sc181_mask_read_both_ways")
    clean = _clean("mask_read_one_way")
    tokens, padding = torch.randn(2, 5, 8), torch.tensor([[0, 0, 0, 1, 1], [0, 0, 0, 0, 1]])
    for module, agrees in ((buggy, False), (clean, True)):
        layer = module.LabelAttention(8, 2, num_labels=3)
        layer.load_state_dict(buggy.LabelAttention(8, 2, num_labels=3).state_dict())
        out, weights = layer(tokens, padding, return_weights=True)
        v = layer.kv(tokens).view(2, 5, 2, 2, 4).permute(2, 0, 3, 1, 4)[1]
        assert torch.allclose(out, weights @ v, atol=1e-5) == agrees  # the fused path against the weights it returns
    scores, keep = torch.randn(2, 3, 4), torch.tensor([[True, True, False, False], [True, True, True, False]])
    for module, agrees in ((buggy, False), (clean, True)):
        probs, filled = module.masked_scores(scores.clone(), keep)
        assert torch.allclose(probs, filled.softmax(-1), atol=1e-6) == agrees


@torch.no_grad()
def test_sc180_a_padding_mask_given_to_sdpa_attends_to_the_padding_alone_and_the_twin_to_the_tokens():
    torch.manual_seed(0)
    buggy = _buggy("sc180_kernel_mask_convention").Pooler(8, 2)
    clean = _clean("kernel_mask_by_convention").Pooler(8, 2)
    clean.load_state_dict(buggy.state_dict())
    x, attention_mask = torch.randn(1, 4, 8), torch.tensor([[1, 1, 1, 0]])
    other = x.clone()
    other[:, -1] = torch.randn(8)  # only the padded position changes
    assert not torch.allclose(buggy(x, attention_mask)[:, :3], buggy(other, attention_mask)[:, :3], atol=1e-5)
    assert torch.allclose(clean(x, attention_mask)[:, :3], clean(other, attention_mask)[:, :3], atol=1e-6)
    q = k = v = torch.randn(1, 2, 4, 4)
    ids = torch.tensor([[5, 6, 7, 0]])
    changed = v.clone()
    changed[..., -1, :] = 100.0  # the padded key's value
    wrong, right = _buggy("sc180_kernel_mask_convention"), _clean("kernel_mask_by_convention")
    assert not torch.allclose(wrong.padded_keys(q, k, v, ids, 0), wrong.padded_keys(q, k, changed, ids, 0))
    assert torch.allclose(right.padded_keys(q, k, v, ids, 0), right.padded_keys(q, k, changed, ids, 0))


@torch.no_grad()
def test_sc182_a_projection_after_the_split_gives_each_head_only_its_slice_and_the_twin_the_whole_width():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8)
    other = x.clone()
    other[..., 4:] = torch.randn(1, 3, 4)  # only the features of the second head's slice change
    for module, sees_all in ((_buggy("sc182_projection_per_head"), False), (_clean("projection_before_split"), True)):
        attention = module.SelfAttention(8, 2)
        seen = []
        attention.queries.register_forward_hook(lambda layer, inputs, out: seen.append(out.reshape(1, 3, 2, 4)))
        attention(x, x, x)
        attention(other, other, other)
        first_head = [q[:, :, 0] for q in seen]
        assert (not torch.allclose(*first_head)) == sees_all  # the first head's queries read the second's features


@torch.no_grad()
def test_sc112_heads_merged_across_the_batch_mix_examples_and_the_permuted_twin_keeps_them_apart():
    torch.manual_seed(0)
    buggy = _buggy("sc112_heads_first_merged").LoopedHeads()
    clean = _clean("heads_first_permuted").LoopedHeads()
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(3, 5, 32)
    assert _mixes_batch(buggy, x, dim=0)
    assert not _mixes_batch(clean, x, dim=0)


@torch.no_grad()
def test_sc185_a_softmax_over_the_size_one_axis_gives_every_position_weight_one_and_the_twin_weighs_them():
    torch.manual_seed(0)
    buggy = _buggy("sc185_softmax_over_one").AdditiveAttention(6, 4, 5)
    clean = _clean("softmax_over_the_positions").AdditiveAttention(6, 4, 5)
    clean.load_state_dict(buggy.state_dict())
    enc, dec = torch.randn(2, 7, 6), torch.randn(2, 4)
    torch.testing.assert_close(buggy(enc, dec), enc.sum(1))  # the decoder state never matters
    torch.testing.assert_close(buggy(enc, torch.randn(2, 4)), buggy(enc, dec))
    assert not torch.allclose(clean(enc, dec), clean(enc, torch.randn(2, 4)), atol=1e-4)
    x = torch.randn(2, 7, 6)
    pooled = _buggy("sc185_softmax_over_one").PooledScores(6)
    torch.testing.assert_close(pooled(x), x.sum(1))
    weights, _ = _clean("softmax_over_the_positions").PooledScores(6)(x)
    assert not torch.allclose(weights, x.sum(1) / 7, atol=1e-4)


@torch.no_grad()
def test_a_keys_first_channels_first_affinity_is_normalised_over_the_memory_as_the_clean_file_does():
    # mkᵀ·qk is (batch, memory, query): dim=1 sums to one over the memory positions for each query position
    torch.manual_seed(0)
    reader = _clean("keys_first_channels_first").MemoryReader()
    mk, qk, mv = torch.randn(1, 4, 2, 3, 3), torch.randn(1, 4, 3, 3), torch.randn(1, 5, 2, 3, 3)
    out = reader(mk, qk, mv)
    affinity = torch.softmax(mk.flatten(2).transpose(1, 2) @ qk.flatten(2) / 2.0, dim=1)
    torch.testing.assert_close(affinity.sum(1), torch.ones(1, 9))
    torch.testing.assert_close(out, torch.bmm(mv.flatten(2), affinity).view(1, 5, 3, 3))


@torch.no_grad()
def test_a_float16_cast_in_a_rotary_helper_leaves_the_scores_float32_so_a_minus_1e10_fill_runs():
    # SC120 reads half precision from a model or a run set to it, not from any float16 in the file
    torch.manual_seed(0)
    clean = _load(CORPUS / "clean" / "float_attention_beside_a_half_helper.py")
    freqs = torch.view_as_complex(torch.randn(3, 2, 2))  # positions 3, pairs 2 of a head of 4: complex64
    rotated = clean.apply_rotary(torch.randn(1, 2, 3, 4), freqs)
    assert rotated.dtype == torch.float32
    out = clean.RotarySelfAttention(8, 2)(torch.randn(1, 3, 8), freqs, torch.tril(torch.ones(3, 3)))
    assert out.shape == (1, 3, 8) and torch.isfinite(out).all()
    with pytest.raises(RuntimeError):
        torch.zeros(2, dtype=torch.float16).masked_fill(torch.tensor([True, False]), -1e10)


@torch.no_grad()
def test_a_class_s_own_scaled_dot_product_attention_method_keeps_dropout_off_in_eval_mode():
    # SC114 reads ``self.scaled_dot_product_attention`` as the class's own method when the class defines it
    torch.manual_seed(0)
    attention = _clean("own_method_named_like_the_kernel").MultiHeadAttention(8, 2, dropout_rate=0.5)
    x = torch.randn(2, 5, 8)
    attention.eval()
    torch.testing.assert_close(attention(x), attention(x))
    attention.train()
    assert not torch.equal(attention(x), attention(x))


@torch.no_grad()
def test_the_path_after_a_raise_never_runs_and_the_running_path_keeps_dropout_off_in_eval():
    # lint reports nothing on the lines after ``raise``: no path reaches them
    torch.manual_seed(0)
    attention = _clean("unreachable_after_raise").PointAttention(8, 2, dropout=0.5).eval()
    x, mask = torch.randn(2, 5, 8), torch.tensor([[True] * 5, [True, True, True, False, False]])
    torch.testing.assert_close(attention(x, mask), attention(x, mask))
    attention.use_fused = True
    with pytest.raises(NotImplementedError):
        attention(x, mask)


@torch.no_grad()
def test_sc186_each_refused_call_raises_type_error_and_the_twin_runs():
    buggy, clean = _buggy("sc186_call_refused"), _clean("call_taken")
    x = torch.randn(2, 6, 16)
    with pytest.raises(TypeError, match="base"):
        buggy.Encoder(16, 2, depth=1)
    with pytest.raises(TypeError, match="pad_val"):
        buggy.Attention(16, 2)(x)
    with pytest.raises(TypeError, match="positional"):
        buggy.Rotary(8, 10000.0)(x, 0, 6)  # the call self.rotary(q, 0, n) makes
    assert clean.Attention(16, 2)(x).shape == (2, 6, 16)
    assert clean.Attention(16, 2)(x, use_flash=True).shape == (2, 6, 16)  # flash-attn or the file's stand-in


def test_sc186_reads_sdpa_signature_as_torch_binds_it():
    """The kernel table's SDPA signature against torch's own: every parameter it names binds by keyword, one
    positional argument more than it allows raises TypeError, and a name it does not list is refused by torch too."""
    from shapecheck.lint.kernels import KERNELS
    sig = KERNELS["scaled_dot_product_attention"]
    q = torch.randn(1, 1, 2, 4)
    values = {"query": q, "key": q, "value": q, "attn_mask": None, "dropout_p": 0.0, "is_causal": False,
              "scale": None, "enable_gqa": False}
    assert set(values) == set(sig.positional) | set(sig.keyword_only)
    F.scaled_dot_product_attention(**values)
    F.scaled_dot_product_attention(*(values[p] for p in sig.positional))
    with pytest.raises(TypeError):
        F.scaled_dot_product_attention(*(values[p] for p in sig.positional), None)
    with pytest.raises(TypeError):
        F.scaled_dot_product_attention(q, q, q, mask=None)


@torch.no_grad()
def test_sc117_probabilities_zeroed_after_the_softmax_do_not_sum_to_one_and_the_twins_do():
    buggy, clean = _buggy("sc117_mask_multiplied_after_softmax"), _clean("mask_multiplied_after_a_masked_softmax")
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 5, 4).unbind(0)
    future = torch.ones(5, 5, dtype=torch.bool).triu(1)  # True = masked
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    rows = lambda f: f(q, k, torch.eye(5).expand(2, 5, 5)).sum(-1)  # noqa: E731  (the weights, with v = I)
    assert (rows(lambda a, b, c: buggy.BaseAttention()(a, b, c, future)) < 0.999).any()
    assert (rows(lambda a, b, c: buggy.zeroed_attention(a, b, c, ~future)) < 0.999).any()
    torch.testing.assert_close(clean.BaseAttention()(q, k, v, future), expected)
    torch.testing.assert_close(clean.renormalised_attention(q, k, v, ~future), expected)
    padded = torch.tensor([[1.0] * 5, [1.0, 1.0, 1.0, 0.0, 0.0]])
    out = clean.padded_queries_zeroed(q, k, v, padded)
    torch.testing.assert_close(out[1, :3], F.scaled_dot_product_attention(q, k, v)[1, :3])
    assert out[1, 3:].abs().sum() == 0


@torch.no_grad()
def test_sc186_a_base_init_called_with_an_older_signature_raises_and_the_twin_rotates():
    buggy, clean = _buggy("sc186_super_call_refused"), _clean("super_call_taken")
    with pytest.raises(TypeError, match="max_positions"):
        buggy.LinearScaledRotary(8, 16)
    with pytest.raises(TypeError, match="positional"):
        buggy.DynamicRotary(8, 16)
    x = torch.randn(2, 5, 8)
    rotated = clean.DynamicRotary(8, 16)(x, offset=3)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))  # a rotation keeps each vector's length
    torch.testing.assert_close(clean.DynamicRotary(8, 16)(x[:, :1]), x[:, :1])  # position 0: no rotation


@torch.no_grad()
def test_sc186_a_keyword_torch_does_not_take_raises_and_the_twin_runs():
    buggy, clean = _buggy("sc186_torch_keyword"), _clean("torch_keyword_taken")
    x = torch.randn(2, 3, 8)
    torch.manual_seed(0)
    attention = clean.CachedAttention(8, 2)
    out, past = attention(x)
    longer, (k, _) = attention(x, past)
    assert longer.shape == (2, 3, 8) and k.shape == (2, 2, 6, 4)  # NumPy's axis and keepdims bound
    torch.manual_seed(0)
    with pytest.raises(TypeError, match="softmax"):
        buggy.CachedAttention(8, 2)(x)
    with pytest.raises(TypeError, match="cat"):
        buggy.CachedAttention(8, 2)(x, past)


@torch.no_grad()
def test_sc187_a_cut_to_minus_zero_empties_the_output_and_the_twin_keeps_it():
    buggy, clean = _buggy("sc187_slice_to_minus_zero"), _clean("slice_to_the_length")
    q = k = v = torch.randn(1, 2, 8, 4)  # 8 positions: a multiple of the block, so no padding
    assert buggy.blocked_attention(q, k, v).shape[-2] == 0
    assert buggy.chunked_keys(k).shape[-2] == 0
    torch.testing.assert_close(clean.blocked_attention(q, k, v), F.scaled_dot_product_attention(q, k, v))
    torch.testing.assert_close(clean.chunked_keys(k), k)
    short = torch.randn(1, 2, 6, 4)  # padding added: both cut it off again
    assert buggy.blocked_attention(short, short, short).shape == clean.blocked_attention(short, short, short).shape


@torch.no_grad()
def test_sc124_a_kernel_given_the_quarter_factor_scales_the_scores_once_and_the_twin_matches_sdpa():
    torch.manual_seed(0)
    buggy = _buggy("sc124_half_scaled_scores").FusedBlock(16, 2)
    clean = _clean("quarter_scaled_attention").FusedBlock(16, 2)
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(2, 5, 16)
    q, k, v = clean.qkv(x).view(2, 5, 3, 2, 8).permute(2, 0, 3, 1, 4)
    merged = lambda o: o.transpose(1, 2).reshape(2, 5, 16)  # noqa: E731
    torch.testing.assert_close(clean(x), merged(F.scaled_dot_product_attention(q, k, v)))  # 1/sqrt(8) in all
    torch.testing.assert_close(buggy(x), merged(F.scaled_dot_product_attention(q, k, v, scale=8 ** -0.25)))
    assert not torch.allclose(buggy(x), clean(x), atol=1e-4)


def test_sc188_an_axis_lost_misaligns_the_broadcast_and_the_twin_keeps_it():
    buggy, clean = _buggy("sc188_combined_with_itself_reduced"), _clean("reduced_with_its_axis_kept")
    positions = torch.tensor([[0, 1, 2], [5, 6, 7]])
    assert torch.equal(clean.relative_to_last(positions), torch.tensor([[2, 1, 0], [2, 1, 0]]))
    with pytest.raises(RuntimeError):
        buggy.relative_to_last(positions)  # (2,) against (2, 3): no broadcast at all
    one = positions[:1]
    assert torch.equal(buggy.relative_to_last(one), clean.relative_to_last(one))  # a batch of 1 hides it
    scores = torch.randn(3, 3, 3)  # as many rows as batches: the shapes broadcast, the values do not
    torch.testing.assert_close(clean.stable_softmax(scores), scores.softmax(-1))
    assert not torch.allclose(buggy.stable_softmax(scores), scores.softmax(-1))
    x = torch.randn(3, 3)
    torch.testing.assert_close(clean.unit_rows(x).norm(dim=1), torch.ones(3))
    assert not torch.allclose(buggy.unit_rows(x).norm(dim=1), torch.ones(3))
    feats = torch.randn(4, 4)
    torch.testing.assert_close(clean.centred(feats).mean(dim=1), torch.zeros(4), atol=1e-6, rtol=0)
    assert not torch.allclose(buggy.centred(feats).mean(dim=1), torch.zeros(4), atol=1e-6)


@torch.no_grad()
def test_sc189_a_softmax_without_its_maximum_gives_nan_and_the_twin_matches_softmax():
    buggy, clean = _buggy("sc189_exp_without_max"), _clean("exp_after_max")
    logits = torch.tensor([[1.0, 2.0, 100.0]])  # exp(100) is inf in float32
    assert torch.isnan(buggy.weights_from(logits)).any()
    torch.testing.assert_close(clean.weights_from(logits), logits.softmax(-1))
    small = torch.randn(2, 3)
    torch.testing.assert_close(buggy.weights_from(small), small.softmax(-1))  # fine while the scores are small


def test_sc190_forward_that_writes_its_mode_never_drops_in_training_and_the_twin_does():
    torch.manual_seed(0)
    buggy = _buggy("sc190_mode_written_in_forward").SelfAttention(16, 2, dropout=0.5).train()
    clean = _clean("mode_left_to_train").SelfAttention(16, 2, dropout=0.5).train()
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(2, 6, 16)
    buggy(x)
    assert buggy.training is False  # one call, and the module is in eval mode
    assert torch.equal(buggy(x), buggy(x))  # no dropout: the same output twice
    assert not torch.equal(clean(x), clean(x)) and clean.training
