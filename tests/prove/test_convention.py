"""prove builds its inputs from the convention probe's decision where forward's names guess wrong (shapecheck.convention)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shapecheck.cli import app
from shapecheck.prove.targets import prove_target

SUPPORT = Path(__file__).parents[1] / "support" / "conventions.py"


def test_query_key_value_self_attention_is_proved_on_one_sequence():
    result = prove_target(f"{SUPPORT}:CausalQKV", d_model=16, heads=2)
    # the names say cross-attention (seq_q, seq_k); its (seq, seq) triangle refuses keys of another length
    assert result.ok and result.checked, result.problems
    assert {name: shape[:2] for name, shape in result.inputs.items()} == {n: ["batch", "seq"] for n in ("query", "key", "value")}
    assert result.convention["attention"] == "self" and result.convention["decided"] is True


@pytest.mark.parametrize("name", ["SeqFirst", "LyingSeqFirst"])
def test_a_module_that_behaves_seq_first_reads_seq_batch_width(name):
    result = prove_target(f"{SUPPORT}:{name}", d_model=16, heads=2)
    assert result.ok and result.checked, result.problems
    assert result.inputs["x"] == ["seq", "batch", 16] and result.output_shape == ["seq", "batch", 16]
    assert result.convention["layout"] == "seq-first"
    assert any("seq-first" in note for note in result.notes)


def test_an_annotation_is_the_contract_the_probe_does_not_override(tmp_path):
    path = tmp_path / "annotated.py"
    path.write_text(f"""
import sys
sys.path.insert(0, {str(SUPPORT.parent)!r})
from jaxtyping import Float
from torch import Tensor
from conventions import SeqFirst


class Annotated(SeqFirst):
    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        return super().forward(x)
""")
    result = prove_target(f"{path}:Annotated", d_model=16, heads=2)
    assert result.inputs["x"] == ["batch", "seq", 16]  # its annotation says so; only unannotated inputs follow behaviour


def test_json_says_what_was_decided_and_text_says_it_in_one_line():
    spec = f"{SUPPORT}:SeqFirst"
    data = json.loads(CliRunner().invoke(app, ["prove", spec, "--d-model", "16", "--heads", "2", "--format", "json"]).stdout)
    assert data["convention"]["layout"] == "seq-first" and data["convention"]["query"] == "x"
    text = CliRunner().invoke(app, ["prove", spec, "--d-model", "16", "--heads", "2"], env={"COLUMNS": "200"}).stdout
    assert "note: convention (probed): self-attention, seq-first" in text


def test_inputs_named_with_inputs_are_not_probed():
    result = prove_target(f"{SUPPORT}:BatchFirst", d_model=16, heads=2, inputs=["x"])
    assert result.convention["decided"] is False and "--inputs" in result.convention["reason"]


def test_the_probe_leaves_state_the_forward_keeps_as_it_was():
    import torch
    from torch import nn

    from shapecheck.convention import decide

    class Counting(nn.Module):  # a module-held counter, as a module-held cache would grow
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(8, 8)
            self.register_buffer("calls", torch.zeros(()))

        def forward(self, x):
            self.calls += 1
            return self.proj(x)

    module = Counting()
    assert decide(module).runs and float(module.calls) == 0  # probed on a copy


def test_a_required_mask_is_built_in_the_shape_and_convention_the_probe_found():
    result = prove_target(f"{SUPPORT}:NeedsMask", d_model=16, heads=2)  # unannotated: its name alone gives no shape
    assert result.ok and result.checked, result.problems
    assert result.inputs["mask"] == ["batch", 1, "seq", "seq"] and result.output_shape == ["batch", "seq", 16]
