"""Run the suite against the newest releases of everything the tests import, and say what broke.

CI installs the pinned set (``constraints/test.txt``), so a release upstream cannot turn main red. This
script is how the pins move forward: in a scratch virtual environment it installs torch (the local
build, as the README does), then the project's test extra and ``tests/thirdparty.txt`` with no
constraints, runs the suite, and prints every package whose newest version differs from its pin and
every test that failed. When it prints no failure, copy the new versions into ``constraints/test.txt``.

    python benchmarks/bench_newest.py [--keep DIR] [-- pytest args]
"""

from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile
import venv

ROOT = pathlib.Path(__file__).resolve().parent.parent
PINS = ROOT / "constraints" / "test.txt"
TORCH = "torch==2.13.0"


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(path: pathlib.Path = PINS) -> dict[str, str]:
    """``{package: version}`` from a pins file (comments and blank lines skipped)."""
    found = {}
    for line in path.read_text().splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep:
            found[_normal(name)] = version.strip()
    return found


def _run(python: pathlib.Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), *args], cwd=ROOT, text=True, capture_output=True, check=check)


def install_newest(where: pathlib.Path) -> pathlib.Path:
    venv.create(where, with_pip=True)
    python = where / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", TORCH)
    _run(python, "-m", "pip", "install", "-q", "-e", ".[test]")
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "-r", "tests/thirdparty.txt")
    return python


def changed(python: pathlib.Path) -> list[tuple[str, str, str]]:
    """(package, pinned, installed) for every pinned package whose installed version differs."""
    pins = pinned()
    freeze = _run(python, "-m", "pip", "freeze").stdout.splitlines()
    rows = []
    for line in freeze:
        name, sep, version = line.partition("==")
        if sep and _normal(name) in pins and pins[_normal(name)] != version:
            rows.append((name, pins[_normal(name)], version))
    return rows


def failures(python: pathlib.Path, pytest_args: list[str]) -> tuple[list[str], str]:
    result = _run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfE", *pytest_args, check=False)
    lines = result.stdout.splitlines()
    failed = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return failed, (lines[-1] if lines else result.stderr.strip()[-200:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=pathlib.Path, help="build the environment here and keep it")
    parser.add_argument("pytest_args", nargs="*", default=["-n", "2"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        python = install_newest(args.keep or pathlib.Path(scratch) / "venv")
        rows = changed(python)
        print(f"{len(rows)} packages newer than their pins" + (":" if rows else ""))
        for name, old, new in rows:
            print(f"  {name:<28}{old:>16} -> {new}")
        failed, summary = failures(python, args.pytest_args)
        print(f"suite on the newest releases: {summary}")
        for line in failed:
            print(f"  {line}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
