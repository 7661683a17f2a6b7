"""What a user's module can do while shapecheck imports, builds and runs it, and what it cannot.

Each misbehaviour is a fixture module in ``modules/``; every run happens in a temporary directory whose
contents are the same afterwards. A run that could not check anything exits 2 with one line, never 0.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shapecheck.cli import app

from .conftest import run_module, snapshot

FAST = {"verify": ["--max-examples", "2", "--property", "output_shape"], "prove": ["--samples", "1"],
        "audit": [], "report": ["--seq-len", "4"]}


def _cli(workdir, monkeypatch, command: str, target: str, *extra: str):
    """The command in-process, run in ``workdir``; returns (exit code, stdout, stderr) and checks the directory."""
    monkeypatch.chdir(workdir)
    before = snapshot(workdir)
    result = CliRunner().invoke(app, [command, target, *FAST[command], *extra])
    assert snapshot(workdir) == before, f"{command} changed the working directory"
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", ["report", "verify", "audit", "prove"])
@pytest.mark.parametrize("fixture", ["SysExitInForward", "SysExitInInit"])
def test_sys_exit_is_exit_2_not_a_silent_pass(workdir, monkeypatch, command, fixture):
    code, out, err = _cli(workdir, monkeypatch, command, f"exits.py:{fixture}")
    assert code == 2 and out == ""
    assert err.strip() == "shapecheck: error: the module exited (sys.exit(0)) while shapecheck ran it; nothing was checked"


@pytest.mark.parametrize("command", ["report", "verify", "audit", "prove"])
def test_keyboard_interrupt_raised_by_the_module_is_not_a_ctrl_c(workdir, monkeypatch, command):
    code, out, err = _cli(workdir, monkeypatch, command, "exits.py:RaisesKeyboardInterrupt", "--format", "json")
    assert code == 2 and out == ""
    assert "the module raised KeyboardInterrupt itself" in err and len(err.strip().splitlines()) == 1


def test_prove_refuses_a_forward_that_returns_none(workdir, monkeypatch):
    code, out, err = _cli(workdir, monkeypatch, "prove", "exits.py:ReturnsNone")
    assert code == 2 and out == "" and "shapes check out" not in err
    assert "forward returns no tensor" in err and "no output shape to prove" in err


@pytest.mark.parametrize("command", ["verify", "audit", "prove"])
@pytest.mark.parametrize("fixture, what", [("HangsInForward", "forward"), ("HangsInInit", "the constructor of HangsInInit")])
def test_timeout_stops_a_call_that_never_returns(workdir, monkeypatch, command, fixture, what):
    code, out, err = _cli(workdir, monkeypatch, command, f"hangs.py:{fixture}", "--timeout", "0.5")
    assert code == 2 and out == ""
    assert what in err and "did not return in 0.5 s (--timeout)" in err


def test_timeout_leaves_a_module_that_returns_alone(workdir, monkeypatch):
    code, out, _ = _cli(workdir, monkeypatch, "audit", "hangs.py:Fine", "--timeout", "30", "--format", "json")
    assert code == 0 and json.loads(out)["ok"] is True


@pytest.mark.parametrize("command", ["report", "audit"])
def test_what_the_module_prints_goes_to_stderr(workdir, monkeypatch, command):
    code, out, err = _cli(workdir, monkeypatch, command, "prints.py:Prints", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["ok"] is True
    assert "printed in __init__" in err and "printed in forward" in err


# ---------------------------------------------------------------- misbehaviours that need a process of their own


@pytest.mark.parametrize("command, target, how", [
    ("audit", "exits.py:OsExitInForward", "os._exit(0)"),
    ("report", "os_exit_at_import.py:Attention", "os._exit(3)"),
    ("verify", "exits.py:OsExitInForward", "os._exit(0)"),  # verify's scratch storage was open when it ended
])
def test_os_exit_cannot_end_the_run_without_a_verdict(workdir, command, target, how):
    before = snapshot(workdir)
    done = run_module([command, target, "--format", "json"], workdir)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == (
        f"shapecheck: error: the module ended the process ({how}) before a report was made; nothing was checked")
    assert snapshot(workdir) == before
    assert not list((workdir.parent / "tmp").iterdir()), "the run left files in TMPDIR"


def test_fd_level_prints_and_a_fork_give_one_valid_report(workdir):
    """prints.py writes to file descriptor 1 (not only print); forks.py forks at import: one JSON report, on stdout."""
    (workdir / "both.py").write_text("import forks\nfrom prints import Prints\n")
    before = snapshot(workdir)
    done = run_module(["prove", "both.py:Prints", "--samples", "1", "--format", "json"], workdir)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True  # exactly one document: a second report would not parse
    assert "written to fd 1 at import" in done.stderr and "{not json" in done.stderr
    assert snapshot(workdir) == before
    assert not list((workdir.parent / "tmp").iterdir()), "compile caches left in TMPDIR"


@pytest.mark.parametrize("status, announced, code, said", [
    (0, b"0", 0, None),  # the child reported and exited 0
    (1 << 8, b"1", 1, None),  # findings
    (0, b"", 2, "the module ended the process (os._exit(0))"),  # exit 0 without a report is not a pass
    (3 << 8, b"", 2, "the module ended the process (os._exit(3))"),
    (9, b"", 2, "the run was killed by signal SIGKILL"),
    (2, b"", 130, None),  # Ctrl-C before the child could report
])
def test_the_supervisor_never_passes_a_run_without_a_report(capsys, status, announced, code, said):
    from shapecheck.cli import _verdict

    assert _verdict(status, announced) == code
    err = capsys.readouterr().err
    assert (said in err) if said else err == ""


def test_a_stop_asked_from_outside_is_named_as_such(capsys):
    """SIGTERM sent to shapecheck (and passed on to the child) is 128 + 15, not blamed on the module."""
    from shapecheck.cli import _verdict

    assert _verdict(15, b"", (15,)) == 143
    assert capsys.readouterr().err.strip() == "shapecheck: error: stopped by SIGTERM before a report was made"
