"""Lint speed against pyflakes on the real corpus, side by side in one run, and wall time with ``--jobs``.

Corpora: every ``models/*/modeling_*.py`` of the installed transformers, and the whole real corpus
(``tests/lint/real_corpus.py``: the installed packages' attention code, read in place). CPU time
(``time.process_time``) of pyflakes (parse + check) and of ``shapecheck lint`` (parse + pyflakes'
undefined names + the attention checker + noqa) over the same source strings, alternating, best of
``--repeat`` passes; then the wall time of ``lint_paths`` on the real corpus with 1 and N processes.

    python benchmarks/bench_lint.py [--repeat 3] [--limit N] [--jobs 1,2] [--extend-select SC102,...]
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import time
from pathlib import Path
from typing import Callable, Optional

import pyflakes
from pyflakes import api as pyflakes_api
from pyflakes import reporter as pyflakes_reporter

from shapecheck.lint import lint_paths, lint_source
from shapecheck.lint.config import LintConfig

ROOT = Path(__file__).resolve().parents[1]


class _Quiet(pyflakes_reporter.Reporter):
    def __init__(self) -> None:
        super().__init__(None, None)

    def unexpectedError(self, *args: object) -> None: ...
    def syntaxError(self, *args: object) -> None: ...
    def flake(self, message: object) -> None: ...


def real_corpus():
    spec = importlib.util.spec_from_file_location("real_corpus", ROOT / "tests" / "lint" / "real_corpus.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def cpu_best(fn: Callable[[], None], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def compare(name: str, paths: list[Path], repeat: int, config: Optional[LintConfig] = None) -> None:
    sources = [(str(p), p.read_text(encoding="utf-8")) for p in paths]
    quiet = _Quiet()
    t_flakes = t_lint = float("inf")
    for _ in range(repeat):  # alternate, so that load on a shared machine hits both alike
        t_flakes = min(t_flakes, cpu_best(lambda: [pyflakes_api.check(t, p, quiet) for p, t in sources], 1))
        t_lint = min(t_lint, cpu_best(lambda: [lint_source(t, p, config) for p, t in sources], 1))
    size = sum(len(t) for _, t in sources) / 1e6
    rules = "default rules" if config is None else f"default rules + {', '.join(config.extend_select)}"
    print(f"{name} ({rules}): {len(sources)} files, {size:.1f} MB; CPU s, best of {repeat}: pyflakes {t_flakes:.2f}, "
          f"shapecheck lint {t_lint:.2f}; lint / pyflakes = {t_lint / t_flakes:.2f}x (target <= 2x)")


def wall(paths: list[Path], jobs: list[int]) -> None:
    names = [str(p) for p in paths]
    for n in jobs:
        start = time.perf_counter()
        lint_paths(names, jobs=n)
        print(f"lint_paths on {len(names)} files with --jobs {n}: {time.perf_counter() - start:.2f} s wall")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="passes; the fastest counts")
    parser.add_argument("--limit", type=int, default=None, help="only the first N files of each corpus")
    parser.add_argument("--jobs", default="1,2", help="process counts to time, comma-separated")
    parser.add_argument("--extend-select", default="", metavar="CODES",
                        help="opt-in rules to run too, comma-separated (their checks are skipped otherwise)")
    args = parser.parse_args()
    config = LintConfig(extend_select=tuple(args.extend_select.split(","))) if args.extend_select else None
    corpus = real_corpus()
    transformers = [p for p in corpus.files("transformers") if p.name.startswith("modeling_")][:args.limit]
    everything = [p for package in corpus.PACKAGES for p in corpus.files(package)][:args.limit]
    print(f"python {platform.python_version()}, pyflakes {pyflakes.__version__}")
    if transformers:
        compare("transformers modeling files", transformers, args.repeat, config)
    compare("real corpus", everything, args.repeat, config)
    wall(everything, [int(j) for j in args.jobs.split(",")])


if __name__ == "__main__":
    main()
