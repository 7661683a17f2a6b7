"""One catalogue: a preset added there is available to report, audit and prove."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shapecheck.catalog import KINDS, PRESETS, Preset, get_kind, get_preset, preset_sizes
from shapecheck.cli import app
from shapecheck.errors import UsageError

TINY = dict(d_model=32, heads=4, layers=2, d_ff=64, vocab=101, max_seq=24, segments=2)


@pytest.fixture
def tiny_bert(monkeypatch):
    monkeypatch.setitem(PRESETS, "tiny-bert", Preset("tiny-bert", "bert", lambda: dict(TINY), "a test's own sizes"))
    return "tiny-bert"


def _params(module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_added_preset_reaches_report(tiny_bert):
    result = CliRunner().invoke(app, ["report", "--preset", tiny_bert, "--format", "json", "--seq-len", "8"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    expected = _params(get_kind("bert").build(preset_sizes(tiny_bert)))
    assert data["total"]["params"] == expected
    assert data["config"]["d_model"] == 32


def test_added_preset_reaches_audit(tiny_bert):
    result = CliRunner().invoke(app, ["audit", "--preset", tiny_bert, "--format", "json"])
    assert result.exit_code == 0, result.output
    expected = _params(get_kind("bert").build(preset_sizes(tiny_bert)))
    assert json.loads(result.output)["totals"]["total"] == expected


def test_added_preset_reaches_prove(tiny_bert):
    result = CliRunner().invoke(app, ["prove", "--preset", tiny_bert, "--format", "json", "--samples", "0"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["output_shape"][-1] == 32
    assert "seq <= 24" in data["constraints"]


def test_unknown_names_fail_with_the_choices():
    with pytest.raises(UsageError, match=r"unknown preset 'nope'; choose one of: .*bert-base"):
        get_preset("nope")
    with pytest.raises(UsageError, match=r"unknown model 'nope'; choose one of: .*encoder"):
        get_kind("nope")


def test_every_preset_names_a_kind_and_builds_on_meta():
    from shapecheck.counting.params import on_meta

    for name, preset in PRESETS.items():
        assert preset.kind in KINDS, name
        module = on_meta(lambda: KINDS[preset.kind].build(preset_sizes(name)))
        assert _params(module) > 0
