"""@checked: messages, bindings, the off switches, and agreement with jaxtyping + beartype."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Optional

import pytest
import torch
from beartype import beartype
from beartype.roar import BeartypeCallHintParamViolation
from hypothesis import given
from hypothesis import strategies as st
from jaxtyping import Bool, Float, Int, jaxtyped
from torch import Tensor, nn

import shapecheck
from reference_models import MultiHeadAttention
from shapecheck import ConfigError, ShapeError, checked


def test_wrong_input_width_names_the_config_binding():
    mha = MultiHeadAttention(512, 8)
    with pytest.raises(ShapeError) as info:
        mha(torch.randn(2, 5, 256))
    assert str(info.value) == (
        "MultiHeadAttention.forward: query.shape[2] is 256, but d_model=512 (bound by the config)\n"
        '  query: expected "batch seq_q d_model", got (2, 5, 256)\n'
        "  bound: d_k=64, d_model=512, d_v=64, heads=8, batch=2, seq_q=5"
    )


def test_wrong_batch_names_the_argument_that_bound_it():
    mha = MultiHeadAttention(16, 2)
    with pytest.raises(ShapeError) as info:
        mha(torch.randn(2, 5, 16), torch.randn(3, 7, 16))
    first = str(info.value).splitlines()[0]
    assert first == "MultiHeadAttention.forward: key.shape[0] is 3, but batch=2 (bound by query.shape[0])"


def test_wrong_return_is_reported_as_the_return_value():
    @checked
    def swap(x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        return x.transpose(0, 1)

    with pytest.raises(ShapeError) as info:
        swap(torch.randn(2, 3, 4))
    assert str(info.value).splitlines()[0] == (
        "swap: return value.shape[0] is 3, but batch=2 (bound by x.shape[0])"
    )


def test_broken_config_names_the_values():
    with pytest.raises(ConfigError) as info:
        MultiHeadAttention(510, 8)
    assert str(info.value) == "AttentionConfig: d_model=510 is not divisible by heads=8"
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d_model": 0, "heads": 8}, "AttentionConfig: d_model=0 must be positive"),
        ({"d_model": 64, "heads": 8, "dropout": 1.0}, "AttentionConfig: dropout=1.0 must be in [0, 1)"),
        ({"d_model": 64, "heads": 8, "impl": "flash"}, "AttentionConfig: impl='flash' is not one of 'sdpa', 'math'"),
    ],
)
def test_config_validation_messages(kwargs, message):
    with pytest.raises(ConfigError, match=None) as info:
        MultiHeadAttention(**kwargs)
    assert str(info.value) == message


def test_rank_and_dtype_errors_are_diagnosed():
    @checked
    def f(x: Float[Tensor, "batch seq"], m: Bool[Tensor, "batch seq"]) -> Float[Tensor, "batch seq"]:
        return x

    with pytest.raises(ShapeError, match=r"^f: x has 3 axes \(2, 3, 4\), but \"batch seq\" needs 2"):
        f(torch.randn(2, 3, 4), torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ShapeError, match=r"^f: m has dtype torch.float32, but the annotation Bool\[\.\.\.\]"):
        f(torch.randn(2, 3), torch.ones(2, 3))
    assert issubclass(ShapeError, TypeError)


def test_non_tensor_arguments_are_checked_by_beartype():
    mha = MultiHeadAttention(16, 2)
    with pytest.raises(BeartypeCallHintParamViolation):
        mha(torch.randn(1, 2, 16), causal="yes")


def test_variadic_broadcast_and_optional_axes():
    @checked
    def g(
        x: Float[Tensor, "*lead seq d"], m: Optional[Bool[Tensor, "#batch seq"]] = None
    ) -> Float[Tensor, "*lead d"]:
        return x.sum(-2)

    assert g(torch.randn(2, 3, 4, 5)).shape == (2, 3, 5)
    assert g(torch.randn(2, 4, 5), torch.ones(1, 4, dtype=torch.bool)).shape == (2, 5)
    assert g(torch.randn(2, 4, 5), torch.ones(3, 4, dtype=torch.bool)).shape == (2, 5)
    with pytest.raises(ShapeError, match=r"m.shape\[1\] is 3, but seq=4"):
        g(torch.randn(2, 4, 5), torch.ones(2, 3, dtype=torch.bool))


def test_checks_disabled_context_turns_checking_off_and_back_on():
    @checked
    def f(x: Float[Tensor, "batch 4"]) -> Float[Tensor, "batch 4"]:
        return x

    with shapecheck.checks_disabled():
        assert not shapecheck.checks_enabled()
        assert f(torch.randn(2, 5)).shape == (2, 5)
    with pytest.raises(ShapeError):
        f(torch.randn(2, 5))


def test_environment_switch_wraps_nothing():
    code = (
        "import shapecheck, reference_models.attention as a\n"
        "f = lambda x: x\n"
        "print(shapecheck.checked(f) is f, hasattr(a.MultiHeadAttention.forward, '__wrapped_by_shapecheck__'))\n"
    )
    env = {**os.environ, "SHAPECHECK_DISABLE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]
    env["SHAPECHECK_DISABLE"] = "0"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


@dataclass(frozen=True)
class _Cfg:
    d_model: int


class _Proj(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = _Cfg(4)

    @checked
    def forward(self, x: Float[Tensor, "batch seq d_model"], ids: Int[Tensor, "batch seq"]) -> Float[Tensor, "batch d_model"]:
        return x.sum(1)


def _jaxtyping_accepts(fn, *args) -> bool:
    try:
        jaxtyped(typechecker=beartype)(fn)(*args)
    except Exception:  # noqa: BLE001 - any rejection counts
        return False
    return True


@given(
    b1=st.integers(1, 3), s1=st.integers(1, 3), d=st.integers(1, 5),
    b2=st.integers(1, 3), s2=st.integers(1, 3), rank=st.integers(1, 3),
)
def test_checker_agrees_with_jaxtyping_and_beartype(b1, s1, d, b2, s2, rank):
    """Ours accepts exactly the calls jaxtyping + beartype accept (config binding aside: d_model=4 fixed)."""
    x = torch.randn(*([b1, s1, d][:rank]))
    ids = torch.zeros(b2, s2, dtype=torch.long)

    def reference(x: Float[Tensor, "batch seq 4"], ids: Int[Tensor, "batch seq"]) -> Float[Tensor, "batch 4"]:
        return x.sum(1)

    ours_accepts = True
    try:
        _Proj()(x, ids)
    except ShapeError:
        ours_accepts = False
    assert ours_accepts == _jaxtyping_accepts(reference, x, ids)


class _NoConfigAttention(nn.Module):
    """The README's example: sizes kept as attributes, no config object."""

    def __init__(self, embed_dim: int = 64, num_heads: int = 4):
        super().__init__()
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.max_seq_len = 8  # a bound, not a size: never bound to an axis
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)

    @checked
    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def test_module_attributes_bind_axes_like_a_config():
    module = _NoConfigAttention()
    assert module(torch.randn(2, 9, 64)).shape == (2, 9, 64)  # seq 9 > max_seq_len: lengths are not bound
    with pytest.raises(ShapeError) as info:
        module(torch.randn(2, 5, 32))
    assert str(info.value).splitlines() == [
        "_NoConfigAttention.forward: x.shape[2] is 32, but d_model=64 (bound by self.embed_dim)",
        '  x: expected "batch seq d_model", got (2, 5, 32)',
        "  bound: d_model=64, d_head=16, heads=4, batch=2, seq=5",
    ]


def test_config_wins_over_attributes_when_both_name_an_axis():
    @dataclass(frozen=True)
    class Config:
        d_model: int = 8

    module = _NoConfigAttention(embed_dim=8, num_heads=2)
    module.config = Config()
    with pytest.raises(ShapeError, match=r"but d_model=8 \(bound by the config\)"):
        module(torch.randn(1, 3, 4))


def test_a_signature_of_arrays_only_still_rejects_what_beartype_rejected():
    """Where every annotation is an array the matchers alone check it (beartype would only repeat them)."""

    @checked
    def same(x: Float[Tensor, "b n"]) -> Float[Tensor, "b n"]:
        return x

    @checked
    def returns_a_list(x: Float[Tensor, "b n"]) -> Float[Tensor, "b n"]:
        return [x]  # type: ignore[return-value]

    assert same(torch.zeros(2, 3)).shape == (2, 3)
    for bad in ([[1.0, 2.0]], torch.zeros(2, 3, dtype=torch.int64), torch.zeros(2)):
        with pytest.raises(ShapeError):
            same(bad)
    with pytest.raises(ShapeError, match="return value is a list, not a Tensor"):
        returns_a_list(torch.zeros(2, 3))
