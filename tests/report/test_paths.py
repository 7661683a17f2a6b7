"""Measured FLOPs equal the closed forms on every attention code path, in train and eval, with and without grad."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from shapecheck.catalog import KINDS
from shapecheck.counting import formulas as f
from shapecheck.counting.dispatch import count_flops, flop_counter_mapping, sdpa_parts

from .helpers import count_real, report, small

MODES = [(train, grad) for train in (True, False) for grad in (True, False)]


def _head(config) -> int:
    """GPT-2's tied head runs after the stack (``module.logits``), outside every recognised part."""
    s = config.sizes
    return 2 * config.batch * config.seq_len * s.d_model * s.vocab if config.model == "gpt-lm" else 0


@pytest.mark.parametrize("model", sorted(KINDS))
@pytest.mark.parametrize("train,grad", MODES)
def test_every_recognised_part_matches_its_formula_on_real_tensors(model, train, grad):
    config = small(model)
    rows, own, count = count_real(config, train=train, grad=grad)
    assert rows and all(measured == formula for measured, formula in rows.values()), rows
    assert sum(own.values()) == sum(formula for _, formula in rows.values()) + _head(config)  # no FLOPs outside
    assert count.uncounted == {}


@pytest.mark.parametrize("model", [m for m, k in KINDS.items() if "impl" in k.uses])
@pytest.mark.parametrize("impl", ["sdpa", "math"])
@pytest.mark.parametrize("train,grad", MODES)
def test_both_attention_paths_give_the_same_rows(model, impl, train, grad):
    config = small(model, impl=impl)
    rows, _, count = count_real(config, train=train, grad=grad)
    assert all(measured == formula for measured, formula in rows.values())
    ops = {r.op for r in count.records}
    if impl == "math":
        assert "aten.bmm" in ops  # QKᵀ and softmax·V as explicit batched products
    elif not train:
        assert "aten._scaled_dot_product_flash_attention_for_cpu" in ops  # the fused CPU kernel


def test_the_report_on_meta_equals_the_count_on_real_tensors():
    config = small("encoder-decoder")
    rows, own, _ = count_real(config, train=False, grad=False)
    data = report(config)
    by_path = {r.path: r for r in data.rows}
    assert data.total["flops"] == sum(own.values())
    for path, (measured, formula) in rows.items():
        if path in by_path:
            assert by_path[path].flops == by_path[path].expected_flops == measured == formula


def _mha_formula(batch: int, seq: int, d_model: int, heads: int) -> int:
    values = {f.B: batch, f.S: seq, f.d_model: d_model, f.h: heads, f.d_k: d_model // heads, f.d_v: d_model // heads}
    return int(f.multi_head_attention().flops.subs(values))


def _ffn_formula(batch: int, seq: int, d_model: int, d_ff: int) -> int:
    return int(f.feed_forward().flops.subs({f.B: batch, f.S: seq, f.d_model: d_model, f.d_ff: d_ff}))


@pytest.mark.parametrize("fast", [True, False])
def test_nn_multihead_attention_fast_path_and_slow_path(fast):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4, batch_first=True).train(not fast)
    x = torch.randn(2, 6, 16)
    with torch.set_grad_enabled(not fast):
        count = count_flops(lambda: mha(x, x, x), mha)
    ops = {r.op for r in count.records}
    assert ("aten._native_multi_head_attention" in ops) == fast  # the fused kernel only under eval + no_grad
    assert count.total == _mha_formula(2, 6, 16, 4)
    assert count.uncounted == {}


def test_fused_mha_parts_follow_the_explicit_path():
    """The fused kernel's count splits into q, k, v, scores, av, o, as the explicit path's rows."""
    mha = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 6, 16)
    with torch.no_grad():
        count = count_flops(lambda: mha(x, x, x), mha)
    assert {r.op for r in count.records} == {"aten._native_multi_head_attention"}
    parts = count.by_part()
    assert parts["scores"] == parts["av"] == 2 * 2 * 6 * 6 * 16  # 2·B·h·S²·d_k with h·d_k = 16
    assert parts["q"] == parts["k"] == parts["v"] == parts["o"] == 2 * 2 * 6 * 16 * 16


@pytest.mark.parametrize("fast", [True, False])
def test_nn_transformer_encoder_layer_fast_path(fast):
    layer = nn.TransformerEncoderLayer(16, 4, 40, batch_first=True).train(not fast)
    x = torch.randn(2, 6, 16)
    with torch.set_grad_enabled(not fast):
        count = count_flops(lambda: layer(x), layer)
    assert ("aten._transformer_encoder_layer_fwd" in {r.op for r in count.records}) == fast
    assert count.total == _mha_formula(2, 6, 16, 4) + _ffn_formula(2, 6, 16, 40)


def test_flop_counter_mode_misses_cpu_sdpa_and_our_mapping_fills_the_gap():
    config = small("mha", impl="sdpa")
    kind = config.kind
    module = kind.build(config.sizes).eval()
    (x,) = kind.inputs(config.sizes, config.batch, config.seq_len, torch.device("cpu"))
    expected = _mha_formula(config.batch, config.seq_len, 16, 2)
    with torch.no_grad(), FlopCounterMode(display=False) as plain:
        module(x)
    with torch.no_grad(), FlopCounterMode(display=False, custom_mapping=flop_counter_mapping()) as ours:
        module(x)
    core = sum(sdpa_parts((2, 2, 5, 8), (2, 2, 5, 8), (2, 2, 5, 8)).values())
    assert plain.get_total_flops() == expected - core  # the silent zero the issue describes
    assert ours.get_total_flops() == expected


@pytest.mark.parametrize("op", ["_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
                                "_scaled_dot_product_cudnn_attention"])
def test_our_sdpa_formula_equals_flop_counters_for_the_variants_it_knows(op):
    from torch.utils.flop_counter import flop_registry

    q, k, v = (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)
    packet = getattr(torch.ops.aten, op)
    theirs = flop_registry[packet]
    fake = [torch.empty(s, device="meta") for s in (q, k, v)]
    out = (torch.empty(2, 3, 5, 4, device="meta"),)
    args = {
        "_scaled_dot_product_efficient_attention": (None, False),
        "_scaled_dot_product_flash_attention": (),
        "_scaled_dot_product_cudnn_attention": (None, False),
    }[op]
    assert theirs(*fake, *args, out_val=out) == sum(sdpa_parts(q, k, v).values())


def test_an_op_without_a_formula_is_listed_not_dropped():
    class Odd(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, dim=-1) @ x.transpose(-1, -2)

    odd = Odd()
    count = count_flops(lambda: odd(torch.randn(3, 4)), odd)
    assert count.total == 2 * 3 * 3 * 4
    assert count.uncounted_list() == [{"op": "aten.cumsum", "calls": 1, "modules": [""]}]


def test_nn_transformer_encoder_nested_fast_path_counts_each_sequence_at_its_own_length():
    """Under eval + no_grad a padding mask turns the batch into a nested tensor and the fused layer skips
    the padding: each sequence costs the formula at its own length. In train mode every position is computed."""
    layer = nn.TransformerEncoderLayer(16, 4, 40, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2)
    x = torch.randn(2, 6, 16)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[0, 4:] = True  # the first sequence has 4 tokens, the second 6
    per_layer = lambda batch, seq: _mha_formula(batch, seq, 16, 4) + _ffn_formula(batch, seq, 16, 40)  # noqa: E731
    with torch.no_grad():
        fast = count_flops(lambda: encoder.eval()(x, src_key_padding_mask=padding), encoder)
    assert {r.op for r in fast.records} == {"aten._transformer_encoder_layer_fwd"}
    assert fast.total == 2 * (per_layer(1, 4) + per_layer(1, 6))
    assert fast.uncounted == {}
    slow = count_flops(lambda: encoder.train()(x, src_key_padding_mask=padding), encoder)
    assert slow.total == 2 * per_layer(2, 6)
    assert slow.uncounted == {}


def test_mha_fast_path_with_a_padding_mask_leaves_nothing_uncounted():
    """Building the float mask runs the in-place masked_fill_: no arithmetic, so --strict must not flag it."""
    mha = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 6, 16)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[0, 4:] = True
    with torch.no_grad():
        count = count_flops(lambda: mha(x, x, x, key_padding_mask=padding), mha)
    assert "aten._native_multi_head_attention" in {r.op for r in count.records}
    assert count.total == _mha_formula(2, 6, 16, 4)
    assert count.uncounted == {}
