"""``shapecheck report`` through typer's CliRunner: formats, exit codes, one-line errors."""

from __future__ import annotations

import csv
import importlib.util
import io
import json

import pytest
from typer.testing import CliRunner

from shapecheck.cli import app
from shapecheck.counting import dispatch

runner = CliRunner()
SMALL = ["--d-model", "16", "--heads", "2", "--layers", "2", "--seq-len", "6"]


def run(*args: str):
    return runner.invoke(app, ["report", *args])


def test_the_readme_command_works_with_the_paper_defaults():
    result = run("--heads", "8", "--d-model", "512")
    assert result.exit_code == 0, result.output
    assert "layers=6" in result.output and "d_ff=2048" in result.output and "seq_len=128" in result.output
    assert "S = 1024 = 2·d_model" in result.output  # attention crossover
    assert "S = 3072" in result.output  # whole-layer crossover, 6·d_model
    assert "✗" not in result.output


def test_json_follows_the_schema_and_rows_add_up():
    data = json.loads(run(*SMALL, "--model", "encoder-decoder", "--vocab", "40", "--format", "json").stdout)
    assert set(data) >= {"config", "rows", "total", "uncounted"}
    for row in data["rows"]:
        assert set(row) >= {"name", "params", "params_formula", "flops", "macs", "other_flops", "flops_formula",
                            "measured_params", "measured_flops"}
        assert row["macs"] * 2 == row["flops"]
    for key in ("params", "flops", "macs", "other_flops"):
        assert sum(r[key] for r in data["rows"]) == data["total"][key]
    assert data["total"]["params"] == data["total"]["model_params"]
    assert data["uncounted"] == []


def test_csv_and_markdown_carry_rows_total_and_uncounted():
    rows = list(csv.DictReader(io.StringIO(run(*SMALL, "--format", "csv").stdout)))
    assert rows[-2]["name"] == "TOTAL" and rows[-1]["name"] == "(uncounted) none"
    assert sum(int(r["flops"]) for r in rows[:-2]) == int(rows[-2]["flops"])
    md = run(*SMALL, "--format", "markdown").stdout
    assert "| layers.1.ffn.w_2 |" in md and "## Uncounted" in md


def test_symbolic_sequence_length_gives_polynomials():
    data = json.loads(run("--model", "mha", "--d-model", "16", "--heads", "2", "--seq-len", "n", "--format", "json").stdout)
    scores = next(r for r in data["rows"] if r["name"] == "scores")
    assert scores["flops"] == scores["measured_flops"] == "32*n**2"  # 2·B·h·n²·d_k = 2·1·2·8 n²
    assert data["crossover"]["attention"]["value"] == 32


def test_uncounted_ops_are_listed_and_strict_exits_1(monkeypatch):
    monkeypatch.setattr(dispatch, "ELEMENTWISE", dispatch.ELEMENTWISE - {"relu"})
    loose = run(*SMALL, "--format", "json")
    assert loose.exit_code == 0
    assert json.loads(loose.stdout)["uncounted"][0]["op"] == "aten.relu"
    assert "uncounted: aten.relu" in run(*SMALL).stdout
    assert run(*SMALL, "--strict").exit_code == 1
    assert "(uncounted) aten.relu" in run(*SMALL, "--format", "csv").stdout
    assert "- aten.relu: 2 calls in layers.0.ffn, layers.1.ffn" in run(*SMALL, "--format", "markdown").stdout
    assert run(*SMALL, "--strict", "--format", "json").exit_code == 1


def test_repeated_layers_are_collapsed_in_the_table_only_on_request_expanded():
    collapsed = run(*SMALL).stdout
    assert "layers.1..1" in collapsed and "layers.1.ffn.w_1" not in collapsed
    assert "layers.1.ffn.w_1" in run(*SMALL, "--all-layers").stdout


def test_plot_file_writes_the_chart_or_says_matplotlib_is_missing(tmp_path):
    target = tmp_path / "chart.svg"
    result = run("--model", "mha", "--d-model", "16", "--heads", "2", "--plot-file", str(target))
    if importlib.util.find_spec("matplotlib") is None:
        assert result.exit_code == 2 and result.stdout == "" and not target.exists()
        assert result.stderr.strip() == ("shapecheck: error: --plot-file needs matplotlib, which is not installed; "
                                         "pip install matplotlib, or use --plot")
    else:
        assert result.exit_code == 0, result.output
        assert "<svg" in target.read_text()


def test_terminal_plot():
    out = run("--model", "mha", "--d-model", "16", "--heads", "2", "--plot").stdout
    assert "S=8192" in out and "█ attention" in out


@pytest.mark.parametrize("args,needle", [
    (["--heads", "7", "--d-model", "512"], "heads must divide d_model (1, 2, 4, 8"),
    (["--heads", "0"], "--heads must be a positive integer"),
    (["--d-model", "-512"], "--d-model must be a positive integer"),
    (["--d-ff", "2.5"], "--d-ff must be a positive integer, got '2.5'"),
    (["--seq-len", "1e3"], "neither a positive integer nor a name"),
    (["--preset", "bert-huge"], "choose one of: mha, bert-base, bert-large, gpt2"),
    (["--model", "rnn"], "choose one of: mha, encoder, decoder"),
    (["--preset", "gpt2", "--model", "bert"], "with this preset use --model gpt or gpt-lm"),
    (["--model", "mha", "--vocab", "100"], "--vocab does not apply to --model mha"),
    (["--model", "bert", "--d-k", "16"], "--d-k does not apply to --model bert"),
    (["--preset", "bert-base", "--seq-len", "600"], "exceeds max_seq=512"),
    (["--format", "yaml"], "choose one of: table, json, markdown, csv"),
    (["--impl", "flash"], "choose one of: sdpa, math"),
    (["--seq-len", "99999999999999999999"], "sizes too large: the (batch, seq, width) activations"),
    (["--model", "mha", "--d-model", "4096", "--heads", "64", "--seq-len", str(2**62)], "sizes too large"),
    (["--heads", "7", "--d-model", "536870909", "--d-ff", "1"], "heads must divide d_model (1, 536870909)"),  # a prime: no O(n) scan
    (["--model", "bert", "--max-seq", "3", "--seq-len", "S"], "measured at S = 1, 2, 3, 4, more than max_seq=3"),
    (["--model", "mha", "--plot", "--format", "json"], "--plot draws a terminal chart, which would break --format json"),
    (["--model", "mha", "--plot", "--format", "csv"], "which would break --format csv"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle):
    result = run(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr


@pytest.mark.parametrize("impl", ["math", "sdpa"])
def test_fvcore_column_agrees_on_explicit_matmuls_and_shows_the_sdpa_miss(impl):
    data = json.loads(run("--model", "mha", "--d-model", "16", "--heads", "2", "--impl", impl, "--fvcore",
                          "--format", "json").stdout)
    rows = {r["name"]: r for r in data["rows"]}
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        assert 2 * rows[name]["fvcore_macs"] == rows[name]["measured_flops"]
    core = rows["scores"]["measured_flops"] + rows["av"]["measured_flops"]
    assert 2 * rows["scores"]["fvcore_macs"] == (core if impl == "math" else 0)
    assert any(note.startswith("fvcore: counts one multiply-add") for note in data["notes"])
