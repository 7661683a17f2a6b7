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
