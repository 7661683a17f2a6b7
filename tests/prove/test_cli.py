"""``shapecheck prove``: JSON fields, exit codes 0 / 1 / 2, one-line usage errors."""

from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from shapecheck.cli import app
from shapecheck.prove import prove

MHA = "reference_models.attention:MultiHeadAttention"
SWAPPED = '''
from jaxtyping import Float
from torch import Tensor, nn


class Swapped(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        return self.proj(x).transpose(0, 1)
'''


def run(*args: str):
    return CliRunner().invoke(app, ["prove", *args])


@pytest.fixture(scope="module")
def swapped_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("targets") / "swapped.py"
    path.write_text(textwrap.dedent(SWAPPED))
    return path


@pytest.fixture(scope="module")
def mha_json():
    return run(MHA, "--d-model", "16", "--heads", "2", "--format", "json")


def test_json_has_the_issue_fields_and_exit_0(mha_json):
    assert mha_json.exit_code == 0, mha_json.output
    data = json.loads(mha_json.stdout)
    assert data["target"].startswith(MHA) and "heads=2 (default 8)" in data["target"]  # a replaced default is shown
    assert data["ok"] and data["exit_code"] == 0 and data["checked"] and data["verdict"] == "shapes check out"
    assert data["inputs"] == {"query": ["batch", "seq", 16]}
    assert data["output_shape"] == ["batch", "seq", 16]
    assert "d_model % heads == 0" in data["constraints"]
    assert data["problems"] == []


def test_cross_flag_gives_seq_q_and_seq_k():
    result = run(MHA, "--d-model", "16", "--heads", "2", "--cross", "--samples", "0", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["inputs"]["key"] == ["batch", "seq_k", 16]
    assert data["output_shape"] == ["batch", "seq_q", 16]


def test_disagreement_exits_1_and_names_both_shapes(swapped_file):
    result = run(f"{swapped_file}:Swapped", "--d-model", "8", "--heads", "2", "--samples", "0", "--format", "json")
    assert result.exit_code == 1, result.output
    [problem] = json.loads(result.stdout)["problems"]
    assert "(seq, batch, 8)" in problem["message"] and "(batch, seq, 8)" in problem["message"]


def test_table_output_shows_shapes_and_problem(swapped_file):
    result = run(f"{swapped_file}:Swapped", "--d-model", "8", "--heads", "2", "--samples", "0")
    assert result.exit_code == 1
    assert "(seq, batch, 8)" in result.stdout and "problem (annotation)" in result.stdout


def test_prove_accepts_a_target_string(swapped_file):
    result = prove(f"{swapped_file}:Swapped", d_model=8, heads=2, samples=0)
    assert result.output_shape == ["seq", "batch", 8] and not result.ok


@pytest.mark.parametrize(
    "args, expected",
    [
        (["no_such_file.py:Model"], "no such file: no_such_file.py"),
        (["--preset", "bert-huge"], "unknown preset 'bert-huge'; choose one of: mha, bert-base"),
        ([], "give a TARGET"),
        ([MHA, "--size", "d_in=big"], "--size item 'd_in=big': the value must be a positive integer, got 'big'"),
        ([MHA, "--max-size", "seq=0"], "--max-size item 'seq=0'"),
        ([MHA, "--format", "yaml"], "--format 'yaml' is not one of: table, json, markdown, csv"),
        ([MHA, "--d-model", "0"], "--d-model must be a positive integer, got 0"),
        ([MHA, "--samples", "few"], "--samples must be a non-negative integer, got 'few'"),
        ([MHA, "--inputs", "queries"], "has no argument 'queries' (arguments: query, key, value"),
        (["reference_models.attention:AttentionConfig"], "is a class but not a torch.nn.Module"),
        (["reference_models.gpt2:GPT2Model", "--d-model", "16", "--heads", "2", "--cross"], "--cross: GPT2Model.forward has no argument along seq_k"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args, expected):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
