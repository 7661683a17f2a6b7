"""Wall time of ``shapecheck verify``: cold CLI runs of the default suite, and time to the first failure per mutant.

- suite: ``verify(MultiHeadAttention, VerifyOptions())`` with the CLI's defaults (50 examples a
  property, heads <= 3, d_head <= 4, batch <= 3, seq <= 5), median of ``--repeats`` runs in one
  process after a warm-up, plus one cold ``python -m shapecheck verify`` subprocess (imports included);
- cold CLI: one ``python -m shapecheck verify`` subprocess each (imports included, default flags) on
  transformers' LlamaAttention and BertSelfAttention and a 2-layer GPT2Model (the whole-model suite);
- mutants: ``fail_fast=True`` with default settings, the time until the first failing property
  (shrinking included) for each module in tests/verify/mutants/, the two seed modules, and the
  modern corpus in tests/verify/modern/ (its median is reported separately).

    python benchmarks/bench_verify.py [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from shapecheck.target import load_target  # noqa: E402
from shapecheck.testing import VerifyOptions, verify  # noqa: E402

SEEDS = [
    ("seed001 (as written)", "tests/corpus/seeds/seed001_attention_constructible.py:MultiHeadedAttention"),
    ("seed002 (as written)", "tests/corpus/seeds/seed002_multihead.py:MultiheadAttention"),
]


def _time(spec: str, options: VerifyOptions) -> tuple[float, object]:
    target = load_target(spec)
    start = time.perf_counter()
    report = verify(target, options)
    return time.perf_counter() - start, report


def suite(repeats: int) -> dict[str, float]:
    spec = "reference_models.attention:MultiHeadAttention"
    _time(spec, VerifyOptions())  # warm-up
    runs = [_time(spec, VerifyOptions(seed=i))[0] for i in range(repeats)]
    start = time.perf_counter()
    cold = subprocess.run([sys.executable, "-m", "shapecheck", "verify", spec, "--format", "json"], cwd=ROOT,
                          capture_output=True, text=True)
    cold_s = time.perf_counter() - start
    return {"median_s": statistics.median(runs), "max_s": max(runs), "cold_cli_s": cold_s, "cli_exit": cold.returncode}


COLD = [
    ("LlamaAttention", "transformers.models.llama.modeling_llama:LlamaAttention"),
    ("BertSelfAttention", "transformers.models.bert.modeling_bert:BertSelfAttention"),
    ("GPT2Model (2 layers)", "transformers.models.gpt2.modeling_gpt2:GPT2Model"),
]


def cold_cli() -> list[dict[str, object]]:
    rows = []
    for name, spec in COLD:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "shapecheck", "verify", spec, "--format", "json"], cwd=ROOT,
                              capture_output=True, text=True)
        rows.append({"module": name, "seconds": time.perf_counter() - start, "exit": done.returncode})
    return rows


def _specs(folder: str) -> list[tuple[str, str]]:
    return [(os.path.basename(p)[:-3], os.path.relpath(p, ROOT) + ":Attention")
            for p in sorted(glob.glob(os.path.join(ROOT, folder, "[a-z]*.py"))) if "class Attention" in open(p).read()]


def mutants(folder: str = "tests/verify/mutants", extra: tuple = tuple(SEEDS)) -> list[dict[str, object]]:
    rows = []
    for name, spec in _specs(folder) + list(extra):
        strict = name == "neg_inf_plain_softmax"  # the fully-masked-row bug fails only with --strict
        seconds, report = _time(spec, VerifyOptions(fail_fast=True, strict=strict))
        failed = next((r for r in report.results if r.status == "failed"), None)  # type: ignore[attr-defined]
        rows.append({"mutant": name + (" (--strict)" if strict else ""), "seconds": seconds,
                     "property": failed.name if failed else "NOT CAUGHT",
                     "counterexample": failed.counterexample if failed else None})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = {"suite": suite(args.repeats), "cold_cli": cold_cli(), "mutants": mutants(),
              "modern": mutants("tests/verify/modern", ()), "cpus": os.cpu_count()}
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return
    s = result["suite"]
    print(f"default suite on MultiHeadAttention: median {s['median_s']:.2f} s, max {s['max_s']:.2f} s "
          f"(in process); cold CLI {s['cold_cli_s']:.2f} s, exit {s['cli_exit']}")
    for row in result["cold_cli"]:
        print(f"cold CLI, default suite, {row['module']}: {row['seconds']:.2f} s, exit {row['exit']}")
    for key in ("mutants", "modern"):
        _table(result[key])


def _table(rows: list) -> None:
    print("| mutant | first failure | seconds | minimal counterexample |\n|---|---|---|---|")
    for row in rows:
        found = row["counterexample"] or {}
        sizes = ", ".join(f"{k}={found[k]}" for k in ("heads", "d_head", "batch", "seq_q", "seq_k", "mask", "dtype") if k in found)
        print(f"| {row['mutant']} | {row['property']} | {row['seconds']:.2f} | {sizes} |")
    times = [row["seconds"] for row in rows]
    print(f"median time to first failure: {statistics.median(times):.2f} s over {len(times)} modules; max {max(times):.2f} s")


if __name__ == "__main__":
    main()
