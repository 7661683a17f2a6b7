"""prove on the 20 transformers models of issue 11 (small configs): no flags, the inputs shaped, the true bounds.

Every position-table model's bound is checked against the model itself: the test
runs it at N (it must run) and at N + 1 (it must fail).
"""

from __future__ import annotations

import importlib.util
import os

import pytest
import torch

pytest.importorskip("transformers")

from shapecheck.prove import prove  # noqa: E402

_SPEC = importlib.util.spec_from_file_location("prove_zoo", os.path.join(os.path.dirname(__file__), "..", "audit", "zoo.py"))
zoo = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(zoo)

SHAPED = {  # models whose inputs are not plain token ids
    "t5": {"input_ids": ["batch", "seq_k"], "decoder_input_ids": ["batch", "seq_q"]},
    "bart": {"input_ids": ["batch", "seq_k"], "decoder_input_ids": ["batch", "seq_q"]},
    "whisper": {"input_features": ["batch", 8, 32], "decoder_input_ids": ["batch", "seq"]},
    "vit": {"pixel_values": ["batch", 3, 16, 16]},
}


def _run_at(name: str, model: torch.nn.Module, n: int) -> None:
    """The model's own forward at sequence length ``n`` (every sequence input that long), batch 1."""
    ids = torch.full((1, n), 3)
    with torch.no_grad():
        if name == "whisper":
            model(input_features=torch.randn(1, 8, 32), decoder_input_ids=ids)
        elif name in ("bart", "t5"):
            model(input_ids=ids, decoder_input_ids=ids)
        else:
            model(input_ids=ids)


@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_proves_without_flags_with_shaped_inputs_and_true_bounds(name):
    model = zoo.ZOO[name](layers=1)  # export traces every layer: one keeps the test fast
    result = prove(model)
    _every_check_ran(name, result)
    _true_bound(name, model, result)


def _every_check_ran(name, result):
    assert result.ok and result.checked, [p.message for p in result.problems] + result.unchecked
    assert result.verdict == "shapes check out"
    assert {s.kind for s in result.samples} >= {"low", "top"}
    assert result.inputs == SHAPED.get(name, {"input_ids": ["batch", "seq"]})
    assert result.output_shape[0] == "batch" and result.output_shape[-1] == zoo.D


def _true_bound(name, model, result):
    """The bound prove states is the model's own: it runs at N and fails at N + 1."""
    n = zoo.POSITION_BOUND.get(name)
    axes = ("seq_k", "seq_q") if name == "bart" else ("seq",)
    if n is None:
        assert not any("<=" in c for c in result.constraints), result.constraints  # no false bound (rotary, relative, none)
        return
    assert all(f"{axis} <= {n}" in result.constraints for axis in axes), result.constraints
    _run_at(name, model, n)
    with pytest.raises(Exception):  # noqa: B017 - each family raises its own error one past its table
        _run_at(name, model, n + 1)
    past = [s for s in result.samples if s.kind == "past"]
    assert past and all(s.problem is None and max(s.sizes.values()) == n + 1 for s in past)


def test_timm_vit_inputs_are_shaped_when_timm_imports():
    try:
        model = zoo.timm_vit()
    except Exception as error:  # noqa: BLE001 - timm installed without torchvision does not import
        pytest.skip(f"timm does not import here: {type(error).__name__}")
    result = prove(model)
    assert result.ok and result.inputs == {"x": ["batch", 3, 16, 16]}


class CachingWrapper(torch.nn.Module):
    """A decoder called with use_cache=True by code that does not expose the flag: the output holds a cache object."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = zoo.ZOO["llama"](layers=1)

    def forward(self, input_ids: torch.Tensor):
        return self.inner(input_ids=input_ids, use_cache=True)


def test_a_cache_object_in_the_output_does_not_break_export():
    result = prove(CachingWrapper(), samples=1)
    assert result.ok, [p.message for p in result.problems]
    assert result.outputs["last_hidden_state"] == ["batch", "seq", zoo.D]
