"""audit's dead-parameter pass calls the probe instance as the convention probe decided (shapecheck.convention):
required masks and rotary tables built in the module's convention, so the pass runs where names alone could not feed it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shapecheck.auditing.targets import audit_target
from shapecheck.cli import app

SUPPORT = Path(__file__).parents[1] / "support" / "conventions.py"


@pytest.mark.parametrize("name, passed", [("NeedsRotary", "freqs_cis"), ("NeedsMask", "mask")])
def test_required_inputs_found_by_the_probe_let_liveness_run(name, passed):
    result = audit_target(f"{SUPPORT}:{name}", d_model=16, heads=2)
    assert result.liveness.ran, result.liveness.detail
    assert result.clean is True and f"{passed}=" in result.liveness.detail
    assert any(note.startswith("convention (probed)") and passed in note for note in result.notes)


def test_a_dead_parameter_behind_a_required_rotary_table_is_found(tmp_path):
    path = tmp_path / "dead.py"
    path.write_text(f"""
import sys
sys.path.insert(0, {str(SUPPORT.parent)!r})
from torch import nn
from conventions import NeedsRotary


class Dead(NeedsRotary):
    def __init__(self, d_model, heads):
        super().__init__(d_model, heads)
        self.gate = nn.Linear(d_model, d_model)  # never called
""")
    result = audit_target(f"{path}:Dead", d_model=16, heads=2)
    assert result.liveness.ran and {p.name for p in result.dead} == {"gate.weight", "gate.bias"}


def test_json_carries_the_decision():
    result = CliRunner().invoke(app, ["audit", f"{SUPPORT}:NeedsMask", "--d-model", "16", "--heads", "2", "--format", "json"])
    data = json.loads(result.stdout)
    assert data["convention"]["mask"]["name"] == "mask" and data["convention"]["mask"]["required"] is True
    assert data["liveness"] == "ran"


def test_transformers_attention_liveness_runs_with_the_probed_rotary_tables():
    pytest.importorskip("transformers")
    result = audit_target("transformers.models.llama.modeling_llama:LlamaAttention", init={"layer_idx": 0})
    assert result.liveness.ran, result.liveness.detail  # its required position_embeddings come from the probe
    assert result.clean is True and "position_embeddings=" in result.liveness.detail
    assert result.convention["supplied"] == {"position_embeddings": "rotary"}
