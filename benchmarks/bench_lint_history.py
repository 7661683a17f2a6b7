"""Recall of ``shapecheck lint`` on real attention bugs: fixes from public repositories' history.

``benchmarks/lint_corpus/history_manifest.tsv`` lists each fix (repository, fix commit, its parent, the
files it changed, the half, what the bug was); the code is read from fetched git snapshots
(``<mirror>/<owner>+<name>/repo``), never kept here. A fix is *caught* when lint gives, on the files
before the fix, an attention finding (same code and message) that the files after the fix no longer
have; a second figure counts pyflakes' undefined names (SC111, on by default) too, as lint reports them. The manifest was split at random into a development half and a held-out half before any rule
was changed; rules are tuned on ``dev`` only, ``held-out`` is measured once, at the end.

Also printed: every finding on the after-fix files (each should be a real defect, not a false alarm),
and how many fixes could not be read (snapshot absent), never counted as missed or caught.

``--manifest`` picks another manifest of the same columns, e.g. ``history_manifest_2.tsv``,
``history_manifest_3.tsv`` or ``history_manifest_4.tsv`` (a second, a third and a fourth disjoint set, each
gathered later with its own random split).

    python benchmarks/bench_lint_history.py [--half dev|held-out|both] [--manifest PATH]
                                            [--mirror /work/.mirror] [--show] [--extend-select CODES]
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path
from typing import NamedTuple, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_lint_precision import NOT_ATTENTION, PARSE_PROBLEMS, add_extend_select, extended, read, rows  # noqa: E402

from shapecheck.lint import lint_bytes  # noqa: E402
from shapecheck.lint.config import LintConfig  # noqa: E402
from shapecheck.lint.messages import Finding  # noqa: E402

MANIFEST = Path(__file__).resolve().parent / "lint_corpus" / "history_manifest.tsv"
HALVES = ("dev", "held-out")


class Fix(NamedTuple):
    repo: str
    commit: str
    parent: str
    files: tuple[str, ...]
    half: str
    why: str


def fixes(path: Path = MANIFEST) -> list[Fix]:
    return [Fix(r[0], r[1], r[2], tuple(f for f in r[3].split(",") if f), r[4], r[5]) for r in rows(path)]


def findings(mirror: Path, repo: str, commit: str, files: tuple[str, ...],
             config: Optional[LintConfig] = None) -> Optional[list[Finding]]:
    """Every finding on those files at that commit but a file's parse problems (SC001-SC003), pyflakes' names
    (SC111) included; None when one of them cannot be read."""
    found = []
    for path in files:
        data = read(mirror, repo, commit, path)
        if data is None:
            return None
        found += [f for f in lint_bytes(data, path, config) if f.code not in PARSE_PROBLEMS]
    return found


def attention_only(found: list[Finding]) -> list[Finding]:
    return [f for f in found if f.code not in NOT_ATTENTION]


_LINE = re.compile(r"\b(lines?) \d+")


def _same(f: Finding) -> tuple[str, str, str]:
    """A finding's file, code and message, line numbers in the message left out: a fix that only moves the
    lines of an unrelated finding does not remove it."""
    return f.path, f.code, _LINE.sub(r"\1 N", f.message)


def removed(before: list[Finding], after: list[Finding]) -> list[Finding]:
    """Findings of ``before`` that ``after`` no longer has (matched by file, code and message, whatever lines
    the message names)."""
    left = collections.Counter(_same(f) for f in after)
    gone = []
    for f in before:
        key = _same(f)
        if left[key]:
            left[key] -= 1
        else:
            gone.append(f)
    return gone


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=(*HALVES, "both"), default="dev",
                        help="which half to measure (default: dev; held-out is measured once, at the end)")
    parser.add_argument("--manifest", default=str(MANIFEST),
                        help=f"manifest of fixes (default: {MANIFEST.relative_to(MANIFEST.parents[2])})")
    parser.add_argument("--mirror", default="/work/.mirror", help="folder of fetched snapshots (owner+name/repo)")
    parser.add_argument("--show", action="store_true", help="print each fix with what lint said")
    add_extend_select(parser)
    args = parser.parse_args(argv)
    config = extended(args)
    mirror = Path(args.mirror)
    manifest = Path(args.manifest)
    if not manifest.is_file():
        parser.error(f"--manifest: no such file: {manifest}")
    listed = fixes(manifest)
    chosen = HALVES if args.half == "both" else (args.half,)
    for half in chosen:
        group = [f for f in listed if f.half == half]
        caught, caught_any, unread, after_findings = [], [], [], []
        for fix in group:
            before_all = findings(mirror, fix.repo, fix.parent, fix.files, config)
            after_all = findings(mirror, fix.repo, fix.commit, fix.files, config)
            if before_all is None or after_all is None:
                unread.append(fix)
                continue
            before, after = attention_only(before_all), attention_only(after_all)
            gone, gone_any = removed(before, after), removed(before_all, after_all)
            if gone:
                caught.append(fix)
            if gone_any:
                caught_any.append(fix)
            after_findings += [(fix, f) for f in after]
            if args.show:
                said = "; ".join(f"{f.code} {f.path}:{f.line}" for f in gone) or "missed"
                names = [f for f in gone_any if f.code in NOT_ATTENTION]
                said += "".join(f" (also pyflakes: {f.path}:{f.line} {f.message})" for f in names)
                print(f"  [{half}] {fix.repo}@{fix.commit[:8]} ({fix.why}): {said}")
        measured = len(group) - len(unread)
        share = f"{len(caught) / measured:.0%}" if measured else "n/a"
        print(f"{half}: caught {len(caught)} of {measured} fixes ({share})"
              + (f"; {len(unread)} not read (snapshot absent under {mirror}): "
                 + ", ".join(sorted({f.repo for f in unread})) if unread else ""))
        share_any = f"{len(caught_any) / measured:.0%}" if measured else "n/a"
        print(f"{half}: caught {len(caught_any)} of {measured} fixes ({share_any}) counting pyflakes' undefined names "
              "(SC111) too")
        print(f"{half}: {len(after_findings)} attention findings on the after-fix files")
        for fix, f in after_findings:
            print(f"    {fix.repo}@{fix.commit[:8]} {f.path}:{f.line} {f.code} {f.message}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
