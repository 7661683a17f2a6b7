"""The precision and history benchmarks: manifests large enough to mean something, every finding labelled, a
fixed random split, and an honest count of what could not be read (a fresh clone has no snapshots)."""

from __future__ import annotations

import collections
import importlib.util
import random
import subprocess
import sys

import pytest

from .helpers import ROOT

BENCH = ROOT / "benchmarks"


def _load(name):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def _halves(count: int, seed: int) -> list[str]:
    """The halves a manifest of ``count`` rows gets from its seed: random.Random(seed) shuffles the row indices,
    the first count // 2 are 'dev', the rest 'held-out'."""
    order = list(range(count))
    random.Random(seed).shuffle(order)
    dev = set(order[: count // 2])
    return ["dev" if i in dev else "held-out" for i in range(count)]


def test_precision_manifest_spans_forty_repositories_and_labels_say_why():
    bench = _load("bench_lint_precision")
    entries = bench.manifest()
    assert len({e.repo for e in entries}) >= 40 and len(entries) >= 200
    for (repo, path, code, line), (_, why) in bench.labels().items():
        assert (repo, path) in {(e.repo, e.path) for e in entries} and code.startswith("SC") and line > 0 and why


def test_history_manifest_split_at_random_with_the_recorded_seed():
    bench = _load("bench_lint_history")
    fixes = bench.fixes()
    assert len(fixes) >= 30 and all(f.files and f.why for f in fixes)
    assert [f.half for f in fixes] == _halves(len(fixes), 2022)


def test_second_history_manifest_is_disjoint_and_split_at_random_with_its_seed():
    bench = _load("bench_lint_history")
    second = bench.fixes(BENCH / "lint_corpus" / "history_manifest_2.tsv")
    assert len(second) >= 30 and all(f.files and f.why and len(f.commit) == len(f.parent) == 40 for f in second)
    assert not {f.commit for f in second} & {f.commit for f in bench.fixes()}
    assert [f.half for f in second] == _halves(len(second), 7305)


def test_third_history_manifest_is_disjoint_and_split_at_random_with_its_seed():
    bench = _load("bench_lint_history")
    third = bench.fixes(BENCH / "lint_corpus" / "history_manifest_3.tsv")
    assert len(third) >= 30 and all(f.files and f.why and len(f.commit) == len(f.parent) == 40 for f in third)
    earlier = bench.fixes() + bench.fixes(BENCH / "lint_corpus" / "history_manifest_2.tsv")
    assert not {f.repo for f in third} & {f.repo for f in earlier}
    assert max(collections.Counter(f.repo for f in third).values()) <= 4
    assert [f.half for f in third] == _halves(len(third), 3163)


def test_fourth_history_manifest_is_disjoint_and_split_at_random_with_its_seed():
    bench = _load("bench_lint_history")
    fourth = bench.fixes(BENCH / "lint_corpus" / "history_manifest_4.tsv")
    assert len(fourth) >= 30 and all(f.files and f.why and len(f.commit) == len(f.parent) == 40 for f in fourth)
    earlier = (bench.fixes() + bench.fixes(BENCH / "lint_corpus" / "history_manifest_2.tsv")
               + bench.fixes(BENCH / "lint_corpus" / "history_manifest_3.tsv"))
    assert not {f.repo for f in fourth} & {f.repo for f in earlier}
    assert not {f.commit for f in fourth} & {f.commit for f in earlier}
    assert len({f.commit for f in fourth}) == len(fourth)
    assert max(collections.Counter(f.repo for f in fourth).values()) <= 4
    assert [f.half for f in fourth] == _halves(len(fourth), 8402)


@pytest.mark.parametrize("number, seed, fixes, repositories", [(5, 1982, 30, 15), (6, 1018, 40, 15), (7, 2216, 40, 15), (8, 473, 40, 15), (9, 2533, 38, 14), (10, 548, 40, 13), (11, 1356, 36, 19), (12, 1559, 52, 25), (13, 881, 60, 31), (14, 1768, 38, 21), (15, 9768, 43, 17), (16, 6419, 31, 9)])
def test_later_history_manifest_is_disjoint_and_split_at_random_with_its_seed(number, seed, fixes, repositories):
    """Sets 5 to 16: disjoint from the earlier sets and from every precision manifest, PyTorch files only; a row
    found after the split to repeat an earlier set is marked 'dropped' and measured in neither half."""
    bench = _load("bench_lint_history")
    corpus = BENCH / "lint_corpus"
    drawn = bench.fixes(corpus / f"history_manifest_{number}.tsv")
    later = [f for f in drawn if f.half != "dropped"]
    assert len(later) >= fixes and all(f.files and f.why and len(f.commit) == len(f.parent) == 40 for f in later)
    earlier = [f for n in ["", *(f"_{k}" for k in range(2, number))]
               for f in bench.fixes(corpus / f"history_manifest{n}.tsv")]
    assert not {f.repo for f in later} & {f.repo for f in earlier}
    assert not {f.commit for f in later} & {f.commit for f in earlier}
    rows = _load("bench_lint_precision").rows
    precision = {row[0] for path in corpus.glob("precision_manifest*.tsv") for row in rows(path)}
    assert not {f.repo for f in later} & precision
    assert len({f.commit for f in later}) == len(later) and len({f.repo for f in later}) >= repositories
    assert max(collections.Counter(f.repo for f in later).values()) <= 4
    assert [f.half for f in later] == [h for f, h in zip(drawn, _halves(len(drawn), seed)) if f.half != "dropped"]


def _split_rows(bench, path: Path, repositories: int) -> tuple[list[list[str]], dict[str, str]]:
    """A split precision manifest's rows and each repository's half: full commits, at most 12 files a repository,
    no file twice, at least ``repositories`` repositories."""
    table = bench.rows(path)
    assert all(len(row) == 4 and len(row[1]) == 40 and row[3] in ("dev", "held-out") for row in table)
    half = {row[0]: row[3] for row in table}
    assert len(half) >= repositories and len({(row[0], row[2]) for row in table}) == len(table)
    assert max(collections.Counter(row[0] for row in table).values()) <= 12
    return table, half


def test_second_precision_manifest_is_fresh_disjoint_and_split_at_random_with_its_seeds():
    """precision_manifest_2.tsv: >= 40 repositories none of which the first precision corpus or a history manifest
    holds; each '# split SEED over: names' line reproduces its halves; its labels name manifest rows."""
    bench = _load("bench_lint_precision")
    corpus = BENCH / "lint_corpus"
    path = corpus / "precision_manifest_2.tsv"
    table, half = _split_rows(bench, path, 40)
    assert {e.repo for e in bench.manifest(path, "dev")} == {r for r, h in half.items() if h == "dev"}
    earlier = {e.repo for e in bench.manifest()}
    for history in sorted(corpus.glob("history_manifest*.tsv")):
        earlier |= {row[0] for row in bench.rows(history)}
    assert not set(half) & earlier
    splits, dropped = [], set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# split "):
            seed, names = line[len("# split "):].split(" over: ")
            splits.append((int(seed), names.split()))
        elif line.startswith("# dropped after split "):
            dropped |= set(line.split(": ", 1)[1].split())
    assert splits and not dropped & set(half)
    drawn = set()
    for seed, names in splits:
        order = sorted(names)
        random.Random(seed).shuffle(order)
        dev = set(order[: len(order) // 2])
        assert all(half[r] == ("dev" if r in dev else "held-out") for r in names if r not in dropped)
        drawn |= set(names)
    assert drawn - dropped == set(half)
    rows = {(row[0], row[2]) for row in table}
    for (repo, file, code, line), (_, why) in bench.labels(corpus / "precision_labels_2.tsv").items():
        assert (repo, file) in rows and code.startswith("SC") and line > 0 and why


@pytest.mark.parametrize("number, repositories", [(3, 30), (4, 40), (5, 40), (6, 40), (7, 40), (8, 40), (9, 40), (10, 40), (11, 40), (12, 40), (13, 40), (14, 40), (15, 40), (16, 40), (17, 40), (18, 40), (19, 40), (20, 40), (21, 40), (22, 40), (23, 40), (24, 40), (25, 40), (26, 40), (27, 40)])
def test_later_precision_manifest_is_fresh_disjoint_and_split_with_its_seed(number, repositories):
    """precision_manifest_N.tsv (N >= 3): repositories none of the earlier precision or history manifests holds,
    split by repository with the seed its header records (names sorted, shuffled, the first half 'dev'); its labels
    name its rows and cover both halves (the held-out one measured once)."""
    bench = _load("bench_lint_precision")
    corpus = BENCH / "lint_corpus"
    path = corpus / f"precision_manifest_{number}.tsv"
    table, half = _split_rows(bench, path, repositories)
    earlier = {e.repo for e in bench.manifest()}
    for n in range(2, number):
        earlier |= {row[0] for row in bench.rows(corpus / f"precision_manifest_{n}.tsv")}
    for history in sorted(corpus.glob("history_manifest*.tsv")):
        earlier |= {row[0] for row in bench.rows(history)}
    assert not set(half) & earlier
    if number >= 25:  # from corpus 25 on, a repository's name under another owner counts too (a fork, copy or rename)
        assert not {r.split("/")[1].lower() for r in half} & {r.split("/")[1].lower() for r in earlier}
    seed = int(path.read_text(encoding="utf-8").split("Split rule: seed ", 1)[1].split()[0])
    order = sorted(half)
    random.Random(seed).shuffle(order)
    assert {r for r, h in half.items() if h == "dev"} == set(order[: len(order) // 2])
    rows = {(row[0], row[2]) for row in table}
    labels = bench.labels(corpus / f"precision_labels_{number}.tsv")
    assert {half[repo] for repo, *_ in labels} == {"dev", "held-out"}
    for (repo, file, code, line), (_, why) in labels.items():
        assert (repo, file) in rows and code.startswith("SC") and line > 0 and why


def test_precision_benchmark_keeps_one_half_and_names_what_it_could_not_read(tmp_path):
    corpus = BENCH / "lint_corpus"
    done = subprocess.run(
        [sys.executable, str(BENCH / "bench_lint_precision.py"), "--mirror", str(tmp_path), "--half", "held-out",
         "--manifest", str(corpus / "precision_manifest_2.tsv"), "--labels", str(corpus / "precision_labels_2.tsv")],
        capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    held_out = [row for row in _load("bench_lint_precision").rows(corpus / "precision_manifest_2.tsv")
                if row[3] == "held-out"]
    assert f"corpus (held-out half): {len(held_out)} files of " in done.stdout
    assert "0 read, " in done.stdout and held_out[0][0] in done.stdout and "100%" not in done.stdout


def test_benchmarks_say_what_they_could_not_read(tmp_path):
    """No snapshot under --mirror: every file is counted as not read and named by repository, nothing is claimed."""
    run = lambda script, *args: subprocess.run(  # noqa: E731
        [sys.executable, str(BENCH / script), "--mirror", str(tmp_path), *args], capture_output=True, text=True,
        env={"PYTHONPATH": str(ROOT)}, timeout=120)
    precision = run("bench_lint_precision.py")
    assert precision.returncode == 0, precision.stderr
    assert "0 read, " in precision.stdout and "not read" in precision.stdout and "karpathy/nanoGPT" in precision.stdout
    assert "100%" not in precision.stdout
    history = run("bench_lint_history.py", "--half", "dev")
    assert history.returncode == 0, history.stderr
    assert "caught 0 of 0 fixes (n/a)" in history.stdout and "not read" in history.stdout
    second = run("bench_lint_history.py", "--half", "both", "--manifest",
                 str(BENCH / "lint_corpus" / "history_manifest_2.tsv"))
    assert second.returncode == 0, second.stderr
    assert second.stdout.count("caught 0 of 0 fixes (n/a); ") == 2 and "lucidrains/x-transformers" in second.stdout
    assert second.stdout.count("caught 0 of 0 fixes (n/a) counting pyflakes") == 2
    missing = run("bench_lint_history.py", "--manifest", str(tmp_path / "none.tsv"))
    assert missing.returncode == 2 and "no such file" in missing.stderr and "Traceback" not in missing.stderr


def test_history_benchmark_counts_pyflakes_names_in_a_second_figure_only(tmp_path):
    """A fix of an undefined name (a NameError on one path) is caught by pyflakes' SC111, not by an attention rule:
    the first figure stays 0 of 1, the second says 1 of 1."""
    repo = tmp_path / "mirror" / "someone+model" / "repo"
    git = lambda *args: subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)  # noqa: E731
    repo.mkdir(parents=True)
    git("init", "-q")
    source = ("import torch\n\n\ndef keys(k, memory=None):\n    if memory is not None:\n"
              "        k = {}((memory, k), dim=-2)\n    return k\n")
    commits = []
    for call in ("torchc.cat", "torch.cat"):
        (repo / "attend.py").write_text(source.format(call))
        git("add", "attend.py")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", call)
        commits.append(subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                                      text=True).stdout.strip())
    manifest = tmp_path / "fixes.tsv"
    manifest.write_text(f"someone/model\t{commits[1]}\t{commits[0]}\tattend.py\tdev\tan undefined name\n")
    done = subprocess.run([sys.executable, str(BENCH / "bench_lint_history.py"), "--mirror", str(tmp_path / "mirror"),
                           "--manifest", str(manifest), "--show"],
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "dev: caught 0 of 1 fixes (0%)\n" in done.stdout
    assert "dev: caught 1 of 1 fixes (100%) counting pyflakes' undefined names" in done.stdout
    assert "undefined name 'torchc'" in done.stdout
