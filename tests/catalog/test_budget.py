"""Every preset lives in one catalogue; commands that build real weights refuse one above the budget, in one line."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from typer.testing import CliRunner

from shapecheck.catalog import KINDS, PRESETS, Preset
from shapecheck.catalog import build as catalog_build
from shapecheck.cli import app

LLAMA_2_7B = 6_738_415_616


@pytest.fixture
def builds(monkeypatch):
    """The device of every llama build: ``meta`` when no weights were allocated."""
    devices: list[str] = []
    kind = KINDS["llama"]

    def spy(sizes):
        devices.append(torch.empty(0).device.type)
        return kind.build(sizes)

    monkeypatch.setitem(KINDS, "llama", replace(kind, build=spy))
    return devices


def test_prove_refuses_a_7b_preset_in_one_line_without_allocating(builds):
    result = CliRunner().invoke(app, ["prove", "--preset", "llama-2-7b"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert "llama-2-7b" in lines[0] and f"{LLAMA_2_7B:,} parameters" in lines[0]
    assert "shapecheck report --preset llama-2-7b" in lines[0]
    assert builds == ["meta"]


def test_the_budget_decides(monkeypatch):
    monkeypatch.setitem(PRESETS, "tiny-mha", Preset("tiny-mha", "mha", lambda: dict(
        d_model=16, heads=2, layers=1, d_ff=64, vocab=10, max_seq=8), "a test's own sizes"))
    monkeypatch.setattr(catalog_build, "REAL_BUDGET", 100)  # tiny-mha has 4·16² + 4·16 = 1,088 parameters
    result = CliRunner().invoke(app, ["prove", "--preset", "tiny-mha", "--samples", "0"])
    assert result.exit_code == 2 and "1,088 parameters" in result.output


def test_audit_counts_a_7b_preset_on_meta(builds):
    result = CliRunner().invoke(app, ["audit", "--preset", "llama-2-7b", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["totals"]["total"] == LLAMA_2_7B
    assert builds == ["meta", "meta", "cpu"]  # the model on meta; its small liveness probe counted, then built


def test_report_counts_a_7b_preset_on_meta(builds):
    result = CliRunner().invoke(app, ["report", "--preset", "llama-2-7b", "--format", "json", "--seq-len", "16"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["total"]["params"] == LLAMA_2_7B
    assert builds == ["meta"]


def test_prove_refuses_a_large_target_counted_on_meta(tmp_path):
    path = tmp_path / "big.py"
    path.write_text("from torch import nn\n\n\nclass Big(nn.Module):\n"
                    "    def __init__(self, d_model=32768, heads=8):\n        super().__init__()\n"
                    "        self.proj = nn.Linear(d_model, d_model)\n\n    def forward(self, x):\n        return self.proj(x)\n")
    result = CliRunner().invoke(app, ["prove", f"{path}:Big"])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and f"{32768 * 32768 + 32768:,} parameters" in result.output
