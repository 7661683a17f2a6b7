"""Per-rule precision of ``shapecheck lint`` on public attention code nobody tuned lint to.

The files are listed in ``benchmarks/lint_corpus/precision_manifest.tsv`` (repository, commit, path); the
code itself is not kept here: it is read from fetched git snapshots, ``<mirror>/<owner>+<name>/repo``
(``git --git-dir ... show commit:path``). Every finding lint gives on them is labelled, by reading the code,
in ``precision_labels.tsv`` (repository, path, code, line, true/false, a one-line reason). The script lints
every file it can read, matches the findings with the labels and prints, per rule, true/false/unlabelled
and the precision; files that could not be read (mirror absent) are counted and named, never skipped
silently. Pyflakes' undefined names (SC111) are listed apart: they are not attention rules.

    python benchmarks/bench_lint_precision.py [--mirror /work/.mirror] [--show]
        [--manifest PATH] [--labels PATH] [--half dev|held-out|both] [--extend-select CODES]

``--show`` prints every finding with its label, so that new findings can be read and labelled.
``--manifest``/``--labels`` pick another corpus, e.g. ``precision_manifest_2.tsv`` with ``precision_labels_2.tsv``:
a fresh corpus split at random by repository into a development half (labelled and tuned on) and a held-out half
(run and labelled once, at the end of a round); its rows carry the half in a 4th column, and ``--half`` keeps
one half (a manifest without that column counts every row in every half).
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple, Optional

from shapecheck.lint import lint_bytes
from shapecheck.lint.config import LintConfig
from shapecheck.lint.messages import Finding

HERE = Path(__file__).resolve().parent / "lint_corpus"
MANIFEST = HERE / "precision_manifest.tsv"
LABELS = HERE / "precision_labels.tsv"
PARSE_PROBLEMS = frozenset({"SC001", "SC002", "SC003"})  # a file not parsed, empty, or its analysis stopped
NOT_ATTENTION = PARSE_PROBLEMS | {"SC111"}  # and pyflakes' names


HALVES = ("dev", "held-out", "both")


class Entry(NamedTuple):
    repo: str
    commit: str
    path: str


def rows(path: Path) -> list[list[str]]:
    """Tab-separated rows of a manifest, comments and blank lines skipped."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    return [line.split("\t") for line in text.splitlines() if line.strip() and not line.startswith("#")]


def manifest(path: Path = MANIFEST, half: str = "both") -> list[Entry]:
    """The manifest's files; with ``half`` 'dev' or 'held-out', only the rows whose 4th column names it
    (a row without a 4th column belongs to every half)."""
    if half not in HALVES:
        raise ValueError(f"half must be one of {HALVES}, not {half!r}")
    return [Entry(*row[:3]) for row in rows(path)
            if half == "both" or len(row) < 4 or row[3].strip() == half]


def git_dir(mirror: Path, repo: str) -> Path:
    """The snapshot's git directory: ``<owner>+<name>/repo``, or the ``.git`` inside it where a snapshot came with
    a work tree."""
    where = mirror / repo.replace("/", "+", 1) / "repo"
    return where / ".git" if (where / ".git").is_dir() else where


def read(mirror: Path, repo: str, commit: str, path: str) -> Optional[bytes]:
    """The file's bytes at that commit in the repository's snapshot, or None when it cannot be read."""
    where = git_dir(mirror, repo)
    if not where.is_dir():
        return None
    done = subprocess.run(["git", "--git-dir", str(where), "show", f"{commit}:{path}"], capture_output=True)
    return done.stdout if done.returncode == 0 else None


def lint_entries(mirror: Path, entries: list[Entry],
                 config: Optional[LintConfig] = None) -> tuple[list[tuple[Entry, Finding]], list[Entry]]:
    """(every finding with its file, the files that could not be read)."""
    found, unread = [], []
    for entry in entries:
        data = read(mirror, *entry)
        if data is None:
            unread.append(entry)
            continue
        found += [(entry, f) for f in lint_bytes(data, entry.path, config)]
    return found, unread


def labels(path: Path = LABELS) -> dict[tuple[str, str, str, int], tuple[bool, str]]:
    """(repo, path, code, line) -> (is it a real defect, why)."""
    return {(r[0], r[1], r[2], int(r[3])): (r[4] == "true", r[5] if len(r) > 5 else "") for r in rows(path)}


def add_extend_select(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--extend-select", default="", metavar="CODES",
                        help="opt-in rules to report too, comma-separated (e.g. every code --list-rules marks opt-in)")


def extended(args: argparse.Namespace) -> LintConfig:
    """The lint configuration ``--extend-select`` asks for."""
    return LintConfig(extend_select=tuple(c for c in args.extend_select.split(",") if c))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", default="/work/.mirror", help="folder of fetched snapshots (owner+name/repo)")
    parser.add_argument("--show", action="store_true", help="print every finding with its label")
    parser.add_argument("--manifest", default=str(MANIFEST), help="files to lint: repository, commit, path[, half]")
    parser.add_argument("--labels", default=str(LABELS), help="labels of the findings on that manifest")
    parser.add_argument("--half", default="both", choices=HALVES,
                        help="keep the rows of one half (4th manifest column); default both")
    add_extend_select(parser)
    args = parser.parse_args(argv)
    entries = manifest(Path(args.manifest), args.half)
    found, unread = lint_entries(Path(args.mirror), entries, extended(args))
    known = labels(Path(args.labels))
    repos = {e.repo for e in entries}
    half = "" if args.half == "both" else f" ({args.half} half)"
    print(f"corpus{half}: {len(entries)} files of {len(repos)} repositories; "
          f"{len(entries) - len(unread)} read, {len(unread)} not read")
    if unread:
        missing = sorted({e.repo for e in unread})
        print(f"  not read ({len(unread)} files; snapshot absent under {args.mirror}): {', '.join(missing)}")
    per_rule: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for entry, f in found:
        if f.code in NOT_ATTENTION:
            per_rule[f.code]["other"] += 1
            continue
        label = known.get((entry.repo, entry.path, f.code, f.line))
        per_rule[f.code]["unlabelled" if label is None else ("true" if label[0] else "false")] += 1
        if args.show:
            verdict = "UNLABELLED" if label is None else ("true" if label[0] else "false") + f": {label[1]}"
            print(f"{entry.repo}\t{entry.path}\t{f.code}\t{f.line}\t{verdict}\t{f.message}")
    print(f"{'rule':7} {'true':>5} {'false':>5} {'unlab.':>6} precision")
    totals: collections.Counter = collections.Counter()
    for code in sorted(per_rule):
        counts = per_rule[code]
        if code in NOT_ATTENTION:
            print(f"{code:7} {counts['other']:>5} findings (not an attention rule; not labelled)")
            continue
        totals.update(counts)
        labelled = counts["true"] + counts["false"]
        share = f"{counts['true'] / labelled:.0%}" if labelled else "n/a"
        print(f"{code:7} {counts['true']:>5} {counts['false']:>5} {counts['unlabelled']:>6} {share}")
    labelled = totals["true"] + totals["false"]
    share = f"{totals['true'] / labelled:.0%}" if labelled else "n/a (no attention finding)"
    print(f"{'all':7} {totals['true']:>5} {totals['false']:>5} {totals['unlabelled']:>6} {share}")
    if totals["unlabelled"]:
        print(f"{totals['unlabelled']} findings are not labelled: run with --show and label them", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
