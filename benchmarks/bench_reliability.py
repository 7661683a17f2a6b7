"""How many hostile inputs shapecheck handles: the corpus in tests/reliability/corpus.py, each case one
``python -m shapecheck`` run in a fresh temporary directory (fixture modules and hostile configs copied in).

A case is handled when its exit status and output are what the corpus expects (``refused``: exit 2 and one
error line; ``json``: one valid JSON document; ``ran``: exit 0 or 1), no traceback is printed, the working
directory is unchanged, nothing is left in TMPDIR, and it ends within ``--limit`` seconds.

    python benchmarks/bench_reliability.py [--only SUBSTRING] [--limit 120] [--checkout PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reliability"))

from corpus import CASES, write_configs  # noqa: E402


def snapshot(directory: Path) -> dict[str, float]:
    return {str(p.relative_to(directory)): (p.stat().st_size if p.is_file() else -1)
            for p in sorted(directory.rglob("*")) if "__pycache__" not in p.parts and not p.is_fifo()}


def run_case(arguments: list[str], expected: str, needle: str, limit: float, checkout: Path) -> tuple[bool, str, float]:
    """(handled, why not, seconds) for one case in a fresh directory."""
    with tempfile.TemporaryDirectory(prefix="shapecheck-hostile-") as top:
        work, tmp = Path(top) / "work", Path(top) / "tmp"
        shutil.copytree(ROOT / "tests" / "reliability" / "modules", work)
        tmp.mkdir()
        write_configs(work)
        before = snapshot(work)
        env = {**os.environ, "PYTHONPATH": str(checkout), "TMPDIR": str(tmp), "COLUMNS": "100"}
        env.pop("TORCHINDUCTOR_CACHE_DIR", None)
        where = work / arguments[0][1:] if arguments[0].startswith("@") else work
        arguments = arguments[1:] if arguments[0].startswith("@") else arguments
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-m", "shapecheck", *arguments], cwd=where, env=env, capture_output=True,
                                  text=True, timeout=limit, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return False, f"still running after {limit:g} s", limit
        seconds = time.perf_counter() - start
        why = _judge(done, expected, needle)
        if not why and "Traceback" in done.stderr + done.stdout:
            why = "a traceback"
        if not why and snapshot(work) != before:
            changed = sorted({name.split("/")[0] for name in set(snapshot(work)) ^ set(before)})
            why = "the working directory changed: " + ", ".join(changed)
        if not why and list(tmp.iterdir()):
            why = "left in TMPDIR: " + ", ".join(p.name for p in tmp.iterdir())
        if not why and list(Path(top).glob("ran_*")):
            why = "a file of the working directory was executed"
        return not why, why, seconds


def _judge(done: subprocess.CompletedProcess, expected: str, needle: str) -> str:
    lines = done.stderr.strip().splitlines()
    if expected == "refused":
        if done.returncode != 2:
            return f"exit {done.returncode}, expected 2 ({(lines or [''])[-1][:100]})"
        if done.stdout.strip():
            return "a refusal printed on stdout"
        if not lines or not lines[-1].startswith("shapecheck: error: "):
            return "no 'shapecheck: error:' line"
        if needle not in lines[-1]:
            return f"refused for another reason: {lines[-1][:120]}"
        return ""
    if done.returncode not in (0, 1):
        return f"exit {done.returncode} ({(lines or [''])[-1][:100]})"
    if expected == "json":
        try:
            data = json.loads(done.stdout)
        except json.JSONDecodeError as error:
            return f"stdout is not one JSON document ({error})"
        if data.get("exit_code") != done.returncode:
            return "JSON exit_code differs from the exit status"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds a case may run")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the shapecheck checkout to run (default: this one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cases = [case for case in CASES if args.only in case[0]]
    results = []
    for name, arguments, expected, needle in cases:
        handled, why, seconds = run_case(arguments, expected, needle, args.limit, args.checkout.resolve())
        results.append({"case": name, "handled": handled, "why": why, "seconds": round(seconds, 2)})
        if not args.json:
            print(f"{'ok  ' if handled else 'FAIL'} {seconds:6.1f}s  {name}" + (f"  -- {why}" if why else ""), flush=True)
    handled = sum(r["handled"] for r in results)
    if args.json:
        print(json.dumps({"handled": handled, "cases": len(results), "results": results}, indent=2))
    else:
        print(f"{handled}/{len(results)} handled")


if __name__ == "__main__":
    main()
