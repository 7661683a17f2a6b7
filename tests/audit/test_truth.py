"""audit never says clean over a check that did not run, and keeps a constructor's own defaults.

Peers: ``sum(p.numel())`` of the module built directly with its defaults.
"""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from shapecheck.auditing import audit
from shapecheck.cli import app


def _run(*args):
    return CliRunner().invoke(app, ["audit", *args])


def _params(module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_unused_linear_without_a_probe_is_not_clean(planted):
    with torch.device("meta"):
        model = planted.UnusedHead(64, 4)
    result = audit(model)
    assert result.counts_clean and result.clean is None and not result.liveness.ran  # not "clean"
    real = planted.UnusedHead(64, 4)
    too_big = audit(real, liveness_limit=10)  # over the limit: the pass does not run, so nothing is claimed
    assert too_big.clean is None and "is over 10" in too_big.liveness.detail
    checked = audit(real)
    assert checked.clean is False and {p.name for p in checked.dead} == {"head.weight", "head.bias"}


def test_no_liveness_gives_clean_null_exit_0_and_a_line_on_stderr(planted_path):
    result = _run(f"{planted_path}:UnusedHead", "--no-liveness", "--format", "json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["clean"] is None and data["liveness"] == "not run" and data["ok"] is True
    assert "liveness not checked" in result.stderr and "--no-liveness" in result.stderr
    table = _run(f"{planted_path}:UnusedHead", "--no-liveness")
    assert "parameters accounted for; liveness not checked" in table.stdout and "clean:" not in table.stdout


def test_swiglu_keeps_its_hidden_default_and_is_a_gated_feed_forward(planted, planted_path):
    result = _run(f"{planted_path}:SwiGLUBlock", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["clean"] is True and data["totals"]["total"] == _params(planted.SwiGLUBlock())
    (ffn,) = [c for c in data["components"] if c["kind"] == "feed_forward"]
    assert ffn["values"] == {"d_model": 512, "d_ff": 1408} and ffn["style"].endswith("(gated)")
    assert "(default" not in data["name"]  # nothing replaced


def test_a_replaced_default_is_printed_and_the_others_kept(planted, planted_path):
    result = _run(f"{planted_path}:SwiGLUBlock", "--d-model", "256", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "dim=256 (default 512)" in data["name"] and "hidden" not in data["name"]
    assert data["totals"]["total"] == _params(planted.SwiGLUBlock(dim=256))
    table = CliRunner().invoke(app, ["audit", f"{planted_path}:SwiGLUBlock", "--d-model", "256"], env={"COLUMNS": "80"})
    assert "dim=256 (default 512)" in " ".join(table.stdout.split())
    assert max(len(line) for line in table.stdout.splitlines()) <= 80  # the long name folds too


def test_constructor_defaults_size_the_model_not_512_by_8(planted, planted_path):
    result = _run(f"{planted_path}:UnusedExtraLinear", "--no-liveness", "--format", "json")
    assert json.loads(result.stdout)["totals"]["total"] == _params(planted.UnusedExtraLinear())  # its defaults: 16, 2


def test_table_fits_80_columns_and_rows_add_up():
    result = CliRunner().invoke(app, ["audit", "--preset", "bert-base"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "encoder.layer.*.attention ×12" in result.stdout.replace("\n", " ") or "×12" in result.stdout
    total = next(line for line in lines if line.startswith("total"))
    assert next(line for line in lines if line.startswith("rows ×")).split()[-1] == total.split()[-1]


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_every_format_renders_and_json_has_the_verdict_fields(planted_path, fmt):
    args = ["audit", f"{planted_path}:KeyWithoutBias", "--d-model", "32", "--heads", "4", "--format", fmt]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})  # wide: the difference on one line
    assert result.exit_code == 1, result.output
    assert "k_proj has no bias" in result.stdout
    if fmt == "json":
        data = json.loads(result.stdout)
        assert (data["ok"], data["exit_code"], data["clean"]) == (False, 1, False)
