"""``shapecheck audit``: exit codes, the three formats, presets, and one-line usage errors."""

import json

import pytest
from typer.testing import CliRunner

from shapecheck.cli import app

runner = CliRunner()


def _run(*args):
    return runner.invoke(app, ["audit", *args])


def test_preset_bert_base_json_is_clean_with_released_total():
    result = _run("--preset", "bert-base", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["clean"] is True and data["ok"] and data["exit_code"] == 0 and data["totals"]["total"] == 109_482_240
    assert data["liveness"] == "ran" and data["dead"] == []
    assert data["totals"]["non_embedding_strict"] < data["totals"]["non_embedding"] < data["totals"]["total"]


def test_table_folds_repeated_layers_and_names_both_conventions():
    result = _run("--preset", "gpt2")
    assert result.exit_code == 0, result.output
    assert "h.*.attn ×12" in result.stdout and "124,439,808" in result.stdout
    assert "tables removed" in result.stdout and "their norms + pooler removed" in result.stdout


@pytest.mark.parametrize("name, exit_code, needle", [
    ("UnusedExtraLinear", 1, "dead: extra.weight"),
    ("MissingOutProjection", 1, "out projection missing: −(d_model² + d_model)"),
    ("KeyWithoutBias", 1, "k_proj has no bias: −d_model"),
    ("TiedLM", 0, "tied embed.weight = lm_head.weight"),
])
def test_planted_targets_exit_codes_and_explanations(planted_path, name, exit_code, needle):
    result = _run(f"{planted_path}:{name}", "--d-model", "32", "--heads", "4", "--format", "markdown")
    assert result.exit_code == exit_code, result.output
    assert needle in result.stdout
    assert "| submodule | kind | formula |" in result.stdout


def test_target_is_counted_at_the_given_size_and_probed_small(planted_path):
    result = _run(f"{planted_path}:UnusedExtraLinear", "--d-model", "512", "--heads", "8", "--format", "json")
    data = json.loads(result.stdout)
    assert data["totals"]["total"] == 5 * (512 * 512 + 512)
    assert {p["name"]: p["numel"] for p in data["dead"]} == {"extra.weight": 512 * 512, "extra.bias": 512}
    assert "d_model=16 (default" not in data["liveness_detail"] and "d_model=16 [d_model]" in data["liveness_detail"]  # ran small


def test_seed002_with_separate_proj_weight_fails_to_construct(seed002_path):
    result = _run(f"{seed002_path}:MultiheadAttention", "--init", "use_separate_proj_weight=true")
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "fails to construct" in line and "use_separate_proj_weight=True" in line and "in_proj_weight" in line


def test_seed002_as_written_audits_clean(seed002_path):
    result = _run(f"{seed002_path}:MultiheadAttention", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["components"][0]["style"].startswith("in_proj_weight")


@pytest.mark.parametrize("args, needle", [
    ((), "either TARGET"),
    (("--preset", "bert-huge"), "unknown preset 'bert-huge'; choose one of: mha, bert-base"),
    (("--preset", "gpt2", "--format", "xml"), "--format 'xml' is not one of: table, json, markdown, csv"),
    (("no/such/file.py:Model",), "no such file"),
    (("--preset", "gpt2", "--heads", "0"), "--heads must be a positive integer, got 0"),
    (("--preset", "gpt2", "--heads", "7"), "not divisible"),
])
def test_usage_errors_are_one_line_exit_2(args, needle):
    result = _run(*args)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert needle in line and "Traceback" not in result.output


def test_table_prints_the_target_name_as_written(tmp_path):
    """Rich reads ':M:' as an emoji code; the table must not turn 'attn.py:M: M(...)' into 'attn.pyⓂ M(...)'."""
    (tmp_path / "attn.py").write_text(
        "from reference_models.attention import MultiHeadAttention\n\n\nclass M(MultiHeadAttention):\n    pass\n")
    spec = f"{tmp_path / 'attn.py'}:M"
    result = runner.invoke(app, ["audit", spec, "--d-model", "32", "--heads", "4"], env={"COLUMNS": "300"})  # no folding
    assert result.exit_code == 0, result.output
    assert f"{spec}: M(" in result.stdout and "Ⓜ" not in result.stdout


def test_a_target_that_fails_on_meta_is_audited_on_the_cpu_only_when_small():
    small = runner.invoke(app, ["audit", "tests/report/test_any_model.py:MetaShy", "--format", "json"])
    assert small.exit_code in (0, 1), small.output
    assert json.loads(small.stdout)["totals"]["total"] == 16 * 16 + 16
    huge = runner.invoke(app, ["audit", "tests/report/test_any_model.py:MetaShyAndHuge"])
    assert huge.exit_code == 2 and huge.stdout == ""
    assert len(huge.stderr.strip().splitlines()) == 1 and "Tensor.item" in huge.stderr  # the meta failure, not an allocation
