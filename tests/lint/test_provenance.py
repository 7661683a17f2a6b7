"""Analysis by data flow, not by names: in-place operations behave as their out-of-place twins, a join keeps
what both branches agree on, a width is what the head count splits."""

from __future__ import annotations

import pytest

from shapecheck.lint import lint_file

from .helpers import CORPUS, EVERY_RULE, codes

BASE = """
import math, torch
def f(q, k, v, mask, d_model, scale):
    scores = q @ k.transpose(-2, -1)
    {step}
    return torch.softmax(scores, dim=-1) @ v
"""


@pytest.mark.parametrize("in_place, out_of_place", [
    ("scores.mul_(d_model ** -0.5)", "scores = scores * d_model ** -0.5"),
    ("scores.div_(math.sqrt(d_model))", "scores = scores / math.sqrt(d_model)"),
    ("scores *= q.size(-1) ** -0.5", "scores = scores * q.size(-1) ** -0.5"),
    ("scores.div_(math.sqrt(q.size(-1)))", "scores = scores / math.sqrt(q.size(-1))"),
    ("scores.masked_fill_(mask, 0.0)", "scores = scores.masked_fill(mask, 0.0)"),
])
def test_in_place_twins_give_the_same_findings(in_place, out_of_place):
    assert codes(BASE.format(step=in_place)) == codes(BASE.format(step=out_of_place))


def test_a_join_keeps_what_both_branches_agree_on():
    both = ("if scale:\n        scores = scores / math.sqrt(q.size(-1))\n    else:\n"
            "        scores = scores * q.size(-1) ** -0.5\n    scores = scores.masked_fill(mask, 0.0)")
    assert codes(BASE.format(step=both)) == ["SC118"]  # scaled on both paths: the scores are still scores


@pytest.mark.parametrize("width", ["C", "c", "d", "D", "width", "emb", "dim", "n_embd"])
@pytest.mark.parametrize("scale", ["* {w} ** -0.5", "* (1.0 / math.sqrt({w}))", "/ math.sqrt({w})",
                                   "/ torch.sqrt(torch.tensor({w}))"])
def test_a_width_is_what_the_head_count_splits_whatever_its_name(width, scale):
    src = f"""
import math, torch
def attend(x, qkv, n_head):
    B, T, {width} = x.size()
    q, k, v = qkv(x).split({width}, dim=2)
    q = q.view(B, T, n_head, {width} // n_head).transpose(1, 2)
    k = k.view(B, T, n_head, {width} // n_head).transpose(1, 2)
    v = v.view(B, T, n_head, {width} // n_head).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) {scale.format(w=width)}
    return torch.softmax(att, dim=-1) @ v
"""
    assert codes(src) == ["SC103"]
    assert codes(src.replace(scale.format(w=width), scale.format(w=f"({width} // n_head)"))) == []


def test_an_attribute_holding_the_width_split_by_the_heads_is_the_head_size_whatever_its_name():
    """``self.dim = int(hidden_dim / num_heads)``: the split names d_head, and the heads-first rows merged for a
    batched matmul are not taken for a merge of heads with the width."""
    (finding,) = lint_file(str(CORPUS / "buggy" / "sc105_split_by_a_head_size_named_dim.py"))
    assert "view(batch, heads, q_len, d_head)" in finding.message and "d_model]" in finding.message
    assert lint_file(str(CORPUS / "clean" / "head_size_named_dim.py"), EVERY_RULE) == []
