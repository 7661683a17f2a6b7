"""Real attention bugs from public repositories: how many ``shapecheck verify`` catches, and its false alarms on the fixes.

The corpus is ``benchmarks/verify_realbugs.json`` (repository, thread, commit where known, path, the bug, the
flags a user of that module would pass, and the half it belongs to: split at random with the recorded
seed). Each case is our own small module ``tests/verify/realbugs/<id>.py`` with the bug (``Attention``)
and its fix (``Fixed``). Per half it prints, with no flags and with the user's flags:

- caught: the buggy module fails a property (exit 1);
- false alarms: the fixed module fails a property (exit 1);
- could not run: verify refused the module (exit 2), counted apart, never as caught.

    python benchmarks/bench_verify_realbugs.py [--half development|held-out|both] [--examples 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from shapecheck.errors import ShapecheckError  # noqa: E402
from shapecheck.target import load_target  # noqa: E402
from shapecheck.testing import VerifyOptions, verify  # noqa: E402

MANIFEST = os.path.join(ROOT, "benchmarks", "verify_realbugs.json")
CASES = os.path.join(ROOT, "tests", "verify", "realbugs")


def options_from_flags(flags: list[str], examples: int) -> VerifyOptions:
    """The VerifyOptions the CLI builds from the flags the manifest records (--causal, --mask X, --scale X)."""
    values: dict = {"max_examples": examples, "seed": 0}
    i = 0
    while i < len(flags):
        if flags[i] == "--causal":
            values["causal"] = True
        elif flags[i] in ("--mask", "--scale", "--layout"):
            values[flags[i][2:]] = float(flags[i + 1]) if flags[i] == "--scale" else flags[i + 1]
            i += 1
        else:
            raise SystemExit(f"unknown flag in the manifest: {flags[i]}")
        i += 1
    return VerifyOptions(**values)


def outcome(spec: str, options: VerifyOptions) -> tuple[str, str]:
    """('failed' | 'passed' | 'could not run', the failed properties or the reason)."""
    try:
        report = verify(load_target(spec), options)
    except ShapecheckError as error:
        return "could not run", str(error).splitlines()[0][:120]
    failed = [r.name for r in report.results if r.status == "failed"]
    return ("failed", ",".join(failed)) if failed else ("passed", "")


def measure(cases: list[dict], examples: int) -> dict:
    rows = []
    for case in cases:
        path = os.path.join(CASES, case["id"] + ".py")
        row = {"id": case["id"]}
        for setting, flags in (("none", []), ("user", case["user_flags"])):
            opts = options_from_flags(flags, examples)
            row[setting] = {"bug": outcome(path + ":Attention", opts), "fix": outcome(path + ":Fixed", opts)}
        rows.append(row)
    total = {}
    for setting in ("none", "user"):
        total[setting] = {
            "caught": sum(r[setting]["bug"][0] == "failed" for r in rows),
            "false_alarms": sum(r[setting]["fix"][0] == "failed" for r in rows),
            "could_not_run": sum("could not run" in (r[setting]["bug"][0], r[setting]["fix"][0]) for r in rows),
        }
    return {"cases": len(rows), "totals": total, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("development", "held-out", "both"), default="both")
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    manifest = json.load(open(MANIFEST))
    halves = ("development", "held-out") if args.half == "both" else (args.half,)
    results = {h: measure([c for c in manifest["cases"] if c["half"] == h], args.examples) for h in halves}
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for half, res in results.items():
        n = res["cases"]
        print(f"== {half} half ({n} cases, seed {manifest['seed']})")
        for row in res["rows"]:
            cells = [f"{s}: bug {row[s]['bug'][0]} {row[s]['bug'][1]} / fix {row[s]['fix'][0]} {row[s]['fix'][1]}".rstrip()
                     for s in ("none", "user")]
            print(f"  {row['id']:<36} " + " | ".join(cells))
        for setting, label in (("none", "no flags"), ("user", "user flags")):
            t = res["totals"][setting]
            print(f"  {label:<10}: caught {t['caught']}/{n} ({100 * t['caught'] / n:.0f}%), "
                  f"false alarms on fixes {t['false_alarms']}/{n}, could not run {t['could_not_run']}")


if __name__ == "__main__":
    main()
