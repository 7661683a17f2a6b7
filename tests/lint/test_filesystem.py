"""Every filesystem entry lint meets gives one finding or one line, never a traceback or a hang; files are read
with a size limit; a broken pyproject.toml is one line, exit 2."""

from __future__ import annotations

import os
import sys
import threading

import pytest
from typer.testing import CliRunner

from shapecheck.cli import app
from shapecheck.lint import api

runner = CliRunner()
GOOD = "import torch\n\n\ndef f(x):\n    return torch.softmax(x, dim=-1)\n"


def lint(*args):
    """The command, run with a deadline: a hang fails the test instead of stopping the suite."""
    box = {}
    worker = threading.Thread(target=lambda: box.update(result=runner.invoke(app, ["lint", "-j", "1", *map(str, args)])),
                              daemon=True)
    worker.start()
    worker.join(30)
    assert "result" in box, f"lint {args} did not return in 30 s"
    result = box["result"]
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result


def sc001(result, reason):
    lines = [line for line in result.stdout.splitlines() if "SC001" in line]
    return len(lines) == 1 and reason in lines[0]


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    return tmp_path


def test_symlink_loop_is_one_finding(tree):
    os.symlink("loop.py", tree / "loop.py")
    result = lint(tree)
    assert result.exit_code == 2 and sc001(result, "loop.py")


def test_dangling_symlink_is_one_finding(tree):
    os.symlink("missing.py", tree / "dangling.py")
    result = lint(tree)
    assert result.exit_code == 2 and sc001(result, "dangling symbolic link")


@pytest.mark.parametrize("target", ["missing.py", "link.py"])
def test_dangling_or_looping_symlink_named_on_the_command_line_is_one_line(tree, target):
    os.symlink(target, tree / "link.py")
    result = lint(tree / "link.py")
    assert result.exit_code == 2 and "dangling or looping symbolic link" in result.output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_does_not_hang(tree):
    os.mkfifo(tree / "pipe.py")
    result = lint(tree)
    assert result.exit_code == 2 and sc001(result, "a FIFO")
    assert lint(tree / "pipe.py").exit_code == 2


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_device_behind_a_py_name_is_not_read(tree):
    os.symlink("/dev/zero", tree / "zero.py")
    result = lint(tree)
    assert result.exit_code == 2 and sc001(result, "a device")


def test_huge_file_is_not_read(tree):
    with open(tree / "huge.py", "wb") as handle:
        handle.truncate(api.MAX_BYTES + 1)  # sparse: costs no disk
    result = lint(tree)
    assert result.exit_code == 2 and sc001(result, "MiB")


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file_and_directory_are_findings(tree):
    secret, closed = tree / "secret.py", tree / "closed"
    secret.write_text(GOOD)
    closed.mkdir()
    (closed / "inner.py").write_text(GOOD)
    secret.chmod(0)
    closed.chmod(0)
    try:
        result = lint(tree)
    finally:
        secret.chmod(0o644)
        closed.chmod(0o755)
    assert result.exit_code == 2
    assert sc001(result, "secret.py") or "secret.py" in result.stdout
    assert "closed" in result.stdout  # not skipped silently


def test_unreadable_directory_found_by_the_walk_is_reported(tree, monkeypatch):
    """The walk's error (what an unreadable directory gives, even to root) becomes a finding for it."""
    (tree / "sub").mkdir()
    real_walk = os.walk

    def walk(root, onerror=None, **kw):
        onerror(PermissionError(13, "Permission denied", str(tree / "sub")))
        yield from real_walk(root, onerror=onerror, **kw)

    monkeypatch.setattr(api.os, "walk", walk)
    monkeypatch.setattr(api, "_unreadable", lambda p: "cannot read directory: Permission denied"
                        if p == str(tree / "sub") else None)
    files = list(api.python_files([str(tree)]))
    assert str(tree / "sub") in files
    (finding,) = api.lint_file(str(tree / "sub"))
    assert finding.code == "SC001" and "Permission denied" in finding.message


@pytest.mark.parametrize("text, says", [
    ("tool = 1\n", "'tool' must be a table"),
    ("[tool]\nshapecheck = 3\n", "[tool.shapecheck] must be a table"),
    ("[tool.shapecheck\n", "cannot read"),
])
def test_broken_pyproject_is_one_line_exit_2(tree, text, says):
    (tree / "pyproject.toml").write_text(text)
    result = lint(tree)
    assert result.exit_code == 2 and says in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("how", ["found", "--config"])
def test_fifo_pyproject_is_one_line_and_does_not_hang(tree, how):
    """A FIFO named pyproject.toml is read through the same bounded reader as source files: refused, not waited on."""
    os.mkfifo(tree / "pyproject.toml")
    result = lint(tree) if how == "found" else lint("--config", tree / "pyproject.toml", tree)
    assert result.exit_code == 2 and "a FIFO" in result.output and len(result.output.strip().splitlines()) == 1


def test_oversized_pyproject_is_one_line(tree):
    (tree / "pyproject.toml").write_text("# padding\n" * (2**20 // 10 + 1))
    result = lint(tree)
    assert result.exit_code == 2 and "larger than 1 MiB" in result.output
