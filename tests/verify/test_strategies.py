"""The strategies: constraints built in, bounds validated, masks with the promised visibility."""

import pytest
import torch
from hypothesis import find, given
from hypothesis.errors import NoSuchExample
from hypothesis import strategies as st

from shapecheck.errors import UsageError
from shapecheck.testing.strategies import attention_cases, attention_shapes, key_masks


@given(attention_shapes(cross=True, max_heads=3, max_d_head=4))
def test_d_model_is_heads_times_d_head(shape):
    assert shape.d_model == shape.heads * shape.d_head
    assert 1 <= shape.heads <= 3 and 1 <= shape.d_head <= 4 and 1 <= shape.seq_q <= 5 and 1 <= shape.seq_k <= 5


def test_cross_draws_unequal_lengths_and_self_does_not():
    found = find(attention_shapes(cross=True), lambda s: s.seq_q != s.seq_k)
    assert found.seq_q != found.seq_k
    assert find(attention_shapes(), lambda s: s.seq_q >= 2).seq_q == 2  # shrinks to the smallest length that qualifies
    with pytest.raises(NoSuchExample):
        find(attention_shapes(cross=False), lambda s: s.seq_q != s.seq_k)


def test_length_one_is_reachable():
    assert find(attention_shapes(cross=True, min_seq=1), lambda s: s.seq_q == 1 and s.seq_k == 1).seq_q == 1


@pytest.mark.parametrize("kwargs, message", [
    ({"min_heads": 0}, "min_heads=0 must be at least 1"),
    ({"min_seq": 4, "max_seq": 2}, "max_seq=2 is smaller than min_seq=4"),
    ({"max_d_head": 2.5}, "max_d_head=2.5 must be an integer"),
])
def test_bounds_are_validated(kwargs, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        find(attention_shapes(**kwargs), lambda s: True)


@given(st.data(), st.integers(1, 3), st.integers(1, 5))
def test_key_masks_keep_a_visible_key_per_item(data, batch, seq_k):
    keep = data.draw(key_masks(batch, seq_k))
    assert keep.shape == (batch, seq_k) and keep.dtype == torch.bool
    assert keep.any(dim=-1).all()


@given(st.data(), st.integers(2, 3), st.integers(1, 5))
def test_fully_masked_case_masks_item_zero_only(data, batch, seq_k):
    keep = data.draw(key_masks(batch, seq_k, fully_masked=True))
    assert not keep[0].any() and keep[1:].any(dim=-1).all()


@given(attention_cases(cross=True, mask=True))
def test_cases_have_matching_tensors(case):
    s = case.shape
    assert case.query.shape == (s.batch, s.seq_q, s.d_model)
    assert case.key.shape == case.value.shape == (s.batch, s.seq_k, s.d_model)
    assert case.keep.shape == (s.batch, s.seq_k)


@given(attention_cases())
def test_self_attention_cases_share_one_tensor(case):
    assert case.key is case.query and case.value is case.query and case.keep is None


@pytest.mark.parametrize("build, message", [
    (lambda: attention_shapes(min_heads=0), "min_heads=0 must be at least 1"),
    (lambda: attention_shapes(max_batch=True), "max_batch=True must be an integer"),
    (lambda: attention_cases(max_seq=1, min_seq=2), "max_seq=1 is smaller than min_seq=2"),
    (lambda: attention_cases(max_sq=3), "unknown bounds max_sq"),
    (lambda: attention_cases(fully_masked=True), "fully_masked=True needs mask=True"),
    (lambda: key_masks(0, 3), "batch=0 must be at least 1"),
    (lambda: key_masks(2, 1.5), "seq_k=1.5 must be an integer"),
])
def test_bad_bounds_fail_when_the_strategy_is_built_not_when_drawn(build, message):
    with pytest.raises(UsageError, match=message):
        build()  # no draw: a typo in a test's strategy fails at collection, naming the bound


def test_bounds_are_keyword_only():
    with pytest.raises(TypeError):
        attention_shapes(3)


def test_docstrings_show_a_sample_draw():
    for strategy in (attention_shapes, key_masks, attention_cases):
        assert "A sample draw" in strategy.__doc__ and ">>>" in strategy.__doc__, strategy.__name__


@given(attention_shapes(d_head_multiple=2, grouped=True))
def test_head_size_multiples_and_kv_heads_that_divide_heads(shape):
    assert shape.d_head % 2 == 0 and shape.d_model == shape.heads * shape.d_head
    assert shape.kv_heads is not None and shape.heads % shape.kv_heads == 0


@given(attention_shapes(fewer_kv_heads=True))
def test_grouped_query_cases_have_fewer_kv_heads(shape):
    assert shape.kv_heads < shape.heads and shape.heads % shape.kv_heads == 0
