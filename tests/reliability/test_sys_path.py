"""``python -m shapecheck`` never imports files from the working directory: it reads them."""

from __future__ import annotations

from .conftest import run_module, snapshot

STDLIB_NAMES = ("ast", "tokenize", "typing", "inspect", "re", "enum", "dataclasses", "functools", "json")


def test_lint_dot_runs_no_file_named_like_a_standard_module(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "tmp").mkdir()
    for name in STDLIB_NAMES:
        (work / f"{name}.py").write_text(f"open({str(tmp_path / ('ran_' + name))!r}, 'w').write('ran')\n")
    before = snapshot(work)
    done = run_module(["lint", "."], work)
    assert not list(tmp_path.glob("ran_*")), "a file in the working directory was executed"
    assert "Traceback" not in done.stderr and done.returncode in (0, 1), done.stderr
    assert snapshot(work) == before
