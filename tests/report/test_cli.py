"""``shapecheck report`` through typer's CliRunner: formats, exit codes, one-line errors."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
from pathlib import Path

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
    assert max(len(line) for line in result.output.splitlines()) <= 80
    output = " ".join(result.output.split())  # lines wrap at 80 columns
    assert "layers=6" in output and "d_ff=2048" in output and "seq_len=128" in output
    assert "S = 1024 = 2·d_model" in output  # attention crossover
    assert "S = 3072" in output  # whole-layer crossover, 6·d_model
    assert "layers.0.self_attn (attention, d_model=512 h=8 h_kv=8 d_head=64" in output
    assert "✓" in output and "✗" not in output


LLAMA_CONFIG = str(Path(__file__).parent / "configs" / "llama-tiny.json")


@pytest.mark.parametrize("args", [[], ["--preset", "bert-base"], ["--config", LLAMA_CONFIG, "--all-layers"]],
                         ids=["default-encoder", "bert-base", "llama-config-all-layers"])
def test_train_mode_agrees_on_correct_models(args):
    """Training FLOPs equal 3 × forward row by row: the first layer's inputs need a gradient as in training,
    every output is trained (BERT's pooler), and a layer's backward stays in that layer."""
    result = run(*args, "--mode", "train", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    compared = [r for r in rows if r["expected_flops"] is not None]
    assert len(compared) >= 4 and all(r["flops"] == r["expected_flops"] for r in compared)


def test_json_follows_the_schema_and_rows_add_up():
    data = json.loads(run(*SMALL, "--model", "encoder-decoder", "--vocab", "40", "--format", "json").stdout)
    assert set(data) >= {"config", "rows", "total", "memory", "crossover", "uncounted", "notes"}
    for row in data["rows"]:
        assert set(row) >= {"path", "kind", "params", "flops", "params_formula", "flops_formula", "expected_params",
                            "expected_flops", "agrees"}
    model = data["rows"][0]
    assert model["path"] == "(model)" and model["params"] == data["total"]["params"]
    assert model["flops"] == data["total"]["flops"] == 2 * data["total"]["macs"]
    top = [r for r in data["rows"] if r["path"] != "(model)" and "." not in r["path"]]
    tied = 2 * 40 * 16  # tgt_embed and generator show src_embed's table in their rows; the total has it once
    assert sum(r["params"] for r in top) - tied == data["total"]["params"]
    assert all(r["agrees"] for r in data["rows"] if r["agrees"] is not None)
    assert data["uncounted"] == []


def test_csv_and_markdown_carry_rows_total_and_uncounted():
    rows = list(csv.DictReader(io.StringIO(run(*SMALL, "--format", "csv").stdout)))
    total = next(r for r in rows if r["module"] == "TOTAL")
    assert total["flops"] == rows[0]["flops"] and rows[0]["module"] == "(model)"
    md = run(*SMALL, "--format", "markdown").stdout
    assert "| layers.0.ffn | mlp |" in md and "- uncounted: none" in md


def test_symbolic_sequence_length_gives_polynomials():
    data = json.loads(run("--model", "mha", "--d-model", "16", "--heads", "2", "--seq-len", "n", "--format", "json").stdout)
    block = data["rows"][0]
    assert block["kind"] == "attention"
    assert block["flops"] == block["expected_flops"] == "64*n**2 + 2048*n"  # 4·B·h·n²·d_head + 8·B·n·d_head·d_model·h
    assert data["crossover"]["attention"]["value"] == 32


def test_uncounted_ops_are_listed_and_strict_exits_1(monkeypatch):
    monkeypatch.setattr(dispatch, "ELEMENTWISE", dispatch.ELEMENTWISE - {"relu"})
    loose = run(*SMALL, "--format", "json")
    assert loose.exit_code == 0
    assert json.loads(loose.stdout)["uncounted"][0]["op"] == "aten.relu"
    assert "uncounted: aten.relu: 2 calls" in run(*SMALL).stdout
    assert run(*SMALL, "--strict").exit_code == 1
    assert "(uncounted) aten.relu" in run(*SMALL, "--format", "csv").stdout
    assert "- uncounted: aten.relu: 2 calls" in run(*SMALL, "--format", "markdown").stdout
    assert run(*SMALL, "--strict", "--format", "json").exit_code == 1


def test_repeated_layers_are_collapsed_in_the_table_only_on_request_expanded():
    collapsed = run(*SMALL).stdout
    assert "layers.1 (repeat, 1 × layers.0)" in collapsed and "layers.1.ffn" not in collapsed
    assert "layers.1.ffn (mlp" in run(*SMALL, "--all-layers").stdout


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
    (["--seq-len", "1e3"], "--seq-len must be a positive integer up to 16,777,216 or a name such as S, got '1e3'"),
    (["--preset", "bert-huge"], "choose one of: mha, bert-base, bert-large, gpt2"),
    (["--model", "rnn"], "--model 'rnn' is not one of: mha, encoder, decoder"),
    (["--preset", "gpt2", "--model", "bert"], "with this preset use --model gpt or gpt-lm"),
    (["--model", "mha", "--vocab", "100"], "--vocab does not apply to --model mha"),
    (["--model", "bert", "--d-k", "16"], "--d-k does not apply to --model bert"),
    (["--preset", "bert-base", "--seq-len", "600"], "exceeds max_seq=512"),
    (["--format", "yaml"], "--format 'yaml' is not one of: table, json, markdown, csv"),
    (["--impl", "flash"], "--impl 'flash' is not one of: sdpa, math"),
    (["--seq-len", "99999999999999999999"], "--seq-len must be a positive integer up to 16,777,216"),
    (["--model", "mha", "--d-model", "4096", "--heads", "64", "--seq-len", str(2**24), "--batch", str(2**16)], "sizes too large"),
    (["--heads", "7", "--d-model", "1048573", "--d-ff", "1"], "heads must divide d_model (1, 1048573)"),  # a prime: no O(n) scan
    (["--model", "bert", "--max-seq", "3", "--seq-len", "S"], "measured at S = 1, 2, 3, 4, more than max_seq=3"),
    (["--model", "mha", "--plot", "--format", "json"], "--plot draws a terminal chart, which would break --format json"),
    (["--model", "mha", "--plot", "--format", "csv"], "which would break --format csv"),
    (["--model", "mha", "--seq-len", "S", "--mode", "train"], "--seq-len S (a polynomial in S) applies to --mode forward"),
    (["--model", "mha", "--seq-len", "S", "--fvcore"], "--fvcore runs fvcore at one length"),
    (["--model", "mha", "--init", "bias=False"], "--init sets a TARGET's constructor arguments"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle):
    result = run(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], result.stderr


@pytest.mark.parametrize("impl", ["math", "sdpa"])
def test_fvcore_column_agrees_on_explicit_matmuls_and_shows_the_sdpa_miss(impl):
    data = json.loads(run("--model", "encoder", *SMALL, "--impl", impl, "--fvcore", "--format", "json").stdout)
    rows = {r["path"]: r for r in data["rows"]}
    assert 2 * rows["layers.0.ffn"]["fvcore_macs"] == rows["layers.0.ffn"]["flops"]
    attention = rows["layers.0.self_attn"]
    core = 2 * (2 * 1 * 2 * 6 * 6 * 8)  # QKᵀ and softmax·V at B=1 h=2 S=6 d_head=8
    assert 2 * attention["fvcore_macs"] == attention["flops"] - (0 if impl == "math" else core)
    assert any(note.startswith("fvcore: counts one multiply-add") for note in data["notes"])


def test_chart_shares_sum_to_one_and_each_part_keeps_its_colour():
    from shapecheck.render.report_chart import PART_COLOURS, flops_by_part, shares
    from shapecheck.report import build, resolve_config

    for model in ("bert-lm", "encoder-decoder", "gpt-lm", "llama"):
        lengths, parts = flops_by_part(build(resolve_config(model))[0])
        assert set(parts) <= set(PART_COLOURS) and "attention" in parts
        fractions = shares(parts)
        for i in range(len(lengths)):
            assert sum(v[i] for v in fractions.values()) == pytest.approx(1.0)
    attention = shares(flops_by_part(build(resolve_config("encoder"))[0])[1])["attention"]
    assert attention[-1] > attention[0]  # the S² part grows with S


@pytest.mark.parametrize("width", [80, 240])
@pytest.mark.parametrize("model", ["encoder-decoder", "bert-lm"])
def test_the_table_fits_the_terminal(model, width):
    result = runner.invoke(app, ["report", "--model", model, *SMALL, "--fvcore"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= width
    wide = any("formula (FLOPs)" in line and "fvcore MACs" in line for line in lines)
    assert wide == (width >= 120)
