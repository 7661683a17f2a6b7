"""Time of ``prove`` against the bare ``torch.export`` call on the same module.

Modules: reference ``MultiHeadAttention(512, 8)`` (self-attention, query (batch, seq, 512))
and reference ``BertModel(BertConfig.base())`` (input_ids (batch, seq)). Variants, each
the median of ``--repeats`` interleaved runs after one warm-up export in the process:
- export: ``torch.export.export(module, (), inputs, dynamic_shapes=<Dim.AUTO on batch
  and seq>, strict=False)``, the call ``prove`` makes;
- prove, samples=0: export plus symbol naming, constraints, annotation comparison and
  the divisibility probe;
- prove, samples=3: the default, which also confirms bounds (the program at N,
  forward at N + 1: BERT-base's 512-row position table) and runs eager forward and
  the exported program at 1 and a middle size, and the program alone at the top
  of each range (seq 512 for BERT-base).

The last column is the sampling overhead: (prove - prove --samples 0) / export;
the target is at most 30% on BERT-base.

    python benchmarks/bench_prove.py [--repeats 3] [--clock wall|cpu] [--threads N] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from collections.abc import Callable

import torch
from torch import nn

from shapecheck.prove import prove

AUTO = torch.export.Dim.AUTO


def _modules() -> dict[str, tuple[nn.Module, dict[str, torch.Tensor]]]:
    from reference_models import MultiHeadAttention
    from reference_models.bert import BertConfig, BertModel

    torch.manual_seed(0)
    return {
        "MultiHeadAttention(512, 8)": (MultiHeadAttention(512, 8).eval(), {"query": torch.randn(3, 7, 512)}),
        "BERT-base": (BertModel(BertConfig.base()).eval(), {"input_ids": torch.randint(0, 2, (3, 7))}),
    }


def _bare_export(module: nn.Module, inputs: dict[str, torch.Tensor]) -> None:
    dynamic = {name: {0: AUTO, 1: AUTO} for name in inputs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.export.export(module, (), inputs, dynamic_shapes=dynamic, strict=False)


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def _seconds(run: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    start = clock()
    run()
    return clock() - start


def measure(repeats: int, clock: str = "wall") -> list[dict[str, object]]:
    modules = _modules()
    warm_module, warm_inputs = modules["MultiHeadAttention(512, 8)"]
    _bare_export(warm_module, warm_inputs)  # the process's first export pays one-time setup
    rows = []
    for name, (module, inputs) in modules.items():
        variants: dict[str, Callable[[], object]] = {
            "export": lambda: _bare_export(module, inputs),
            "prove, samples=0": lambda: prove(module, samples=0),
            "prove, samples=3": lambda: prove(module),
        }
        times: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(repeats):
            for variant, run in variants.items():
                times[variant].append(_seconds(run, CLOCKS[clock]))
        base = statistics.median(times["export"])
        for variant, values in times.items():
            median = statistics.median(values)
            rows.append({"module": name, "variant": variant, "seconds": round(median, 3), "vs_export": round(median / base, 2)})
        sampling = statistics.median(times["prove, samples=3"]) - statistics.median(times["prove, samples=0"])
        rows.append({"module": name, "variant": "sampling overhead", "seconds": round(sampling, 3),
                     "vs_export": round(sampling / base, 2)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                        help="wall time, or this process's CPU time (steadier on a shared, loaded machine)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (1 with --clock cpu: no busy-waiting worker threads inflate CPU time)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = measure(args.repeats, args.clock)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, median of {args.repeats}, {args.clock} clock")
    print(f"{'module':<28} {'variant':<18} {'seconds':>8} {'x export':>9}")
    for row in rows:
        print(f"{row['module']:<28} {row['variant']:<18} {row['seconds']:>8.3f} {row['vs_export']:>9.2f}")


if __name__ == "__main__":
    main()
