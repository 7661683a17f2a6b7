"""Lint speed on every ``models/*/modeling_*.py`` of the installed transformers, against pyflakes.

Both read the same source strings already in memory. pyflakes: parse + its checker
(``pyflakes.api.check``). shapecheck lint: parse + pyflakes' undefined names + the
attention checker + noqa (``lint_source``); the attention checker alone is shown too.

    python benchmarks/bench_lint.py [--repeat 3] [--limit N]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import platform
import sys
import time
from pathlib import Path

import pyflakes
from pyflakes import api as pyflakes_api
from pyflakes import reporter as pyflakes_reporter

from shapecheck.lint import lint_source
from shapecheck.lint.checker import Checker


class _Quiet(pyflakes_reporter.Reporter):
    def __init__(self) -> None:
        super().__init__(None, None)

    def unexpectedError(self, *args: object) -> None: ...
    def syntaxError(self, *args: object) -> None: ...
    def flake(self, message: object) -> None: ...


def sources(limit: int | None) -> list[tuple[str, str]]:
    spec = importlib.util.find_spec("transformers")
    if spec is None or spec.origin is None:
        sys.exit("transformers is not installed")
    paths = sorted(Path(spec.origin).parent.glob("models/*/modeling_*.py"))[:limit]
    return [(str(p), p.read_text(encoding="utf-8")) for p in paths]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="passes over the corpus; the fastest counts")
    parser.add_argument("--limit", type=int, default=None, help="only the first N files")
    args = parser.parse_args()
    files = sources(args.limit)
    quiet = _Quiet()
    findings: list[int] = []

    def run_pyflakes() -> None:
        for path, text in files:
            pyflakes_api.check(text, path, quiet)

    def run_lint() -> None:
        findings.clear()
        for path, text in files:
            findings.append(len(lint_source(text, path)))

    def run_checker_only() -> None:
        for path, text in files:
            Checker(ast.parse(text), path)

    def run_parse() -> None:
        for _, text in files:
            ast.parse(text)

    size = sum(len(t) for _, t in files) / 1e6
    t_flakes, t_lint = best(run_pyflakes, args.repeat), best(run_lint, args.repeat)
    t_parse, t_checker = best(run_parse, args.repeat), best(run_checker_only, args.repeat)
    print(f"corpus: {len(files)} transformers modeling_*.py files, {size:.1f} MB of source")
    print(f"python {platform.python_version()}, pyflakes {pyflakes.__version__}, best of {args.repeat} passes")
    print(f"pyflakes (parse + check):                {t_flakes:7.2f} s")
    print(f"shapecheck lint (parse + undefined names + attention checker): {t_lint:7.2f} s")
    print(f"  of which ast.parse alone:              {t_parse:7.2f} s")
    print(f"  of which attention checker alone:      {t_checker - t_parse:7.2f} s")
    print(f"lint / pyflakes: {t_lint / t_flakes:.2f}x (target: within 2x); {sum(findings)} findings")


if __name__ == "__main__":
    main()
