"""Ctrl-C: prove and audit print what finished and exit 130."""

from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from shapecheck.cli import app

STOPS = '''
import os
import signal

import torch
from jaxtyping import Float
from torch import Tensor, nn


class StopsAtLength20(nn.Module):
    """Runs (and exports) at short lengths; a "Ctrl-C" arrives when a run reaches 20 tokens."""

    def __init__(self, d_model=8, heads=2):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        if not torch.compiler.is_compiling() and not isinstance(x.shape[1], torch.SymInt) and x.shape[1] >= 20:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, as the terminal sends it
        return self.proj(x)
'''


@pytest.fixture(scope="module")
def stops(tmp_path_factory):
    path = tmp_path_factory.mktemp("interrupt") / "stops.py"
    path.write_text(textwrap.dedent(STOPS))
    return f"{path}:StopsAtLength20"


def test_prove_prints_what_finished_and_exits_130(stops, ctrl_c):
    result = CliRunner().invoke(app, ["prove", stops, "--format", "json"])
    assert result.exit_code == 130, result.output
    data = json.loads(result.stdout)
    assert data["exit_code"] == 130 and not data["checked"] and "interrupted" in data["unchecked"][0]
    assert data["samples"] and data["samples"][0]["sizes"]["seq"] == 1  # the low sample finished first


def test_audit_prints_the_counts_and_exits_130(tmp_path, ctrl_c):
    path = tmp_path / "stop_audit.py"
    path.write_text(textwrap.dedent(STOPS).replace(">= 20", ">= 1"))
    result = CliRunner().invoke(app, ["audit", f"{path}:StopsAtLength20", "--format", "json"])
    assert result.exit_code == 130, result.output
    data = json.loads(result.stdout)
    assert data["totals"]["total"] == 8 * 8 + 8 and data["clean"] is None and data["exit_code"] == 130 and "interrupted" in data["liveness_detail"]
