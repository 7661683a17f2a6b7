"""The README tells the truth: every console example is what the command prints, every Python example runs."""

from __future__ import annotations

import os
import runpy
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from .readme import README, Session, abridge, matches, python_blocks, sessions

TEXT = README.read_text(encoding="utf-8")
UPDATE = os.environ.get("SHAPECHECK_UPDATE_README") == "1"


def _run(session: Session) -> list[str]:
    from shapecheck.cli import app

    result = CliRunner().invoke(app, session.argv, env={"COLUMNS": "80"})
    return [line.rstrip() for line in result.output.rstrip("\n").splitlines()]


@pytest.mark.parametrize("session", sessions(TEXT), ids=lambda s: f"line{s.line}")
def test_console_example_prints_what_the_readme_shows(session, monkeypatch):
    monkeypatch.chdir(README.parent)
    actual = _run(session)
    if UPDATE:
        _rewrite(session, abridge(session.expected, actual))
        return
    assert matches(session.expected, actual), (
        f"README.md:{session.line}: `{session.command}` prints\n" + "\n".join(actual)
    )


@pytest.mark.parametrize("block", python_blocks(TEXT), ids=lambda b: f"line{b[0]}")
def test_python_example_runs_as_written(block, monkeypatch):
    line, code = block
    monkeypatch.chdir(README.parent)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"readme_line{line}.py"
        path.write_text(code, encoding="utf-8")
        runpy.run_path(str(path), run_name="__readme__")


def test_readme_has_examples_of_every_command():
    commands = {s.argv[0] for s in sessions(TEXT) if s.argv}
    assert {"report", "verify", "audit", "lint", "prove"} <= commands


def _rewrite(session: Session, output: list[str]) -> None:
    """Replace the output under ``$ <command>`` (found by its text: earlier rewrites may have moved it)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index(f"$ {session.command}") + 1
    end = start
    while end < len(lines) and not lines[end].startswith("$ ") and not lines[end].startswith("```"):
        end += 1
    lines[start:end] = output
    README.write_text("\n".join(lines) + "\n", encoding="utf-8")
