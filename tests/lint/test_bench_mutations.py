"""The mutation benchmark injects the bug it names: here, a scale by the width the heads split."""

from __future__ import annotations

import ast
import importlib.util

from .helpers import ROOT


def _bench():
    spec = importlib.util.spec_from_file_location("bench_lint_mutations", ROOT / "benchmarks" / "bench_lint_mutations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _class(source: str) -> ast.ClassDef:
    return ast.parse(source).body[0]


def test_scale_by_width_uses_the_width_the_heads_split_not_the_input_width():
    bench = _bench()
    timm_like = _class("""
class Attention:
    def __init__(self, dim, dim_out, heads):
        self.dim = dim
        self.dim_out = dim_out
        self.heads = heads
        self.head_dim = dim_out // heads
""")
    assert bench._class_width(timm_like) == "dim_out"
    plain = _class("""
class Attention:
    def __init__(self, embed_dim, num_heads):
        self.embed_dim = embed_dim
        self.head_dim = self.embed_dim // num_heads
""")
    assert bench._class_width(plain) == "embed_dim"
    assert bench._class_width(_class("class A:\n    def f(self):\n        self.hidden_size = 4\n")) == "hidden_size"


def test_a_merge_into_one_query_position_is_no_site_for_the_merge_bug():
    # (B, heads, 1, d) -> (B, 1, C) moves no element with or without the transpose: nothing to detect
    bench = _bench()
    for merge in ("reshape(B, 1, C)", "reshape(B, C)"):
        func = ast.parse(f"def f(x, B, C):\n    return x.transpose(1, 2).{merge}\n").body[0]
        assert not bench.merge_no_transpose(func, None)
    for merge in ("reshape(B, N, C)", "reshape(B, -1)", "contiguous().view(B, 1 * N, C)"):
        func = ast.parse(f"def f(x, B, N, C):\n    return x.transpose(1, 2).{merge}\n").body[0]
        assert bench.merge_no_transpose(func, None)
        assert "transpose" not in ast.unparse(func)
    torch = __import__("torch")
    x = torch.randn(2, 3, 1, 4)  # one query position: the transpose changes nothing
    assert torch.equal(x.transpose(1, 2).reshape(2, 1, 12), x.reshape(2, 1, 12))


def test_a_split_of_one_query_position_is_no_site_for_the_split_bug():
    bench = _bench()
    func = ast.parse("def f(x, B, h, d):\n    return x.reshape(B, 1, h, d).transpose(1, 2)\n").body[0]
    assert not bench.split_no_transpose(func, None)
    func = ast.parse("def f(x, B, N, h, d):\n    return x.reshape(B, N, h, d).transpose(1, 2)\n").body[0]
    assert bench.split_no_transpose(func, None)
    assert ast.unparse(func.body[0].value) == "x.reshape(B, h, N, d)"
    torch = __import__("torch")
    x = torch.randn(2, 1, 12)
    assert torch.equal(x.reshape(2, 1, 3, 4).transpose(1, 2), x.reshape(2, 3, 1, 4))


def test_scale_by_width_ignores_an_attribute_set_to_the_width_on_one_path_only():
    bench = _bench()
    pool = _class("""
class AttentionPool:
    def __init__(self, in_features, out_features, embed_dim, num_heads):
        self.in_features = in_features
        if out_features:
            self.out_features = out_features
        else:
            self.out_features = embed_dim
        self.num_heads = num_heads
        head_dim = embed_dim // num_heads
""")
    assert bench._class_width(pool) is None


def test_a_scale_that_already_is_the_widths_is_no_site_for_the_width_bug():
    # CvT scales by embed_dim ** -0.5 on purpose: replacing it by self.embed_dim ** -0.5 would inject nothing
    bench = _bench()
    source = """
class Attention:
    def __init__(self, embed_dim, heads):
        self.embed_dim = embed_dim
        self.head_dim = embed_dim // heads
        self.scale = {scale}

    def forward(self, q, k):
        return (q @ k.transpose(-1, -2)) * self.scale
"""
    for scale, site in (("embed_dim ** -0.5", False), ("embed_dim**-0.5", False), ("self.head_dim ** -0.5", True)):
        module = ast.parse(source.format(scale=scale))
        cls = module.body[0]
        assert bench.scale_by_width(cls.body[1], cls) is site
        if site:
            assert "self.embed_dim ** (-0.5)" in ast.unparse(cls.body[1])


def test_an_attention_output_rescaled_after_a_fused_call_is_no_scaling_site():
    # IP-Adapter style: SDPA's output times a weight, before a later SDPA on another branch: no scores are scaled
    bench = _bench()
    func = ast.parse("""
def f(self, q, k, v, ip_k, ip_v, F):
    h = F.scaled_dot_product_attention(q, k, v)
    extra = F.scaled_dot_product_attention(q, ip_k, ip_v)
    h = h + extra * self.scale
    return F.scaled_dot_product_attention(h, k, v)
""").body[0]
    assert not bench.scale_removed(func, None)
    scores = ast.parse("def f(self, q, k):\n    s = q @ k.transpose(-1, -2) * self.scale\n    return s.softmax(-1)\n").body[0]
    assert bench.scale_removed(scores, None) and "scale" not in ast.unparse(scores)


def test_a_factor_before_a_fused_call_with_its_default_scale_is_no_site_for_the_scale_bug():
    # x-transformers rescales q by (scale / default_scale) for SDPA, which applies 1/sqrt(d) itself: removing the
    # factor leaves the scores scaled, so there is no unscaled attention to detect
    bench = _bench()
    corrected = """
def attend(q, k, v, scale):
    default_scale = q.shape[-1] ** -0.5
    q = q * (scale / default_scale)
    return F.scaled_dot_product_attention(q, k, v)
"""
    assert not bench.scale_removed(ast.parse(corrected).body[0], None)
    for fused in ("F.scaled_dot_product_attention(q, k, v, scale=1.0)",
                  "F.scaled_dot_product_attention(q, k, v) if q.is_cuda else npu_attention(q, k, v, scale=1.0)"):
        # the scale is the call's argument: without the factor nothing scales the scores
        func = ast.parse(corrected.replace("F.scaled_dot_product_attention(q, k, v)", fused)).body[0]
        assert bench.scale_removed(func, None)
