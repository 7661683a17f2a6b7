"""Wall time and peak RSS of ``shapecheck report``, against the import-torch floor and two peer counters.

    python benchmarks/bench_report.py [--repeat 3]

1. A GPT-3-sized encoder (96 layers, d_model 12288, 96 heads, d_ff 49152, seq 2048):
   the JSON report, checked exact against closed forms computed here in plain Python.
2. The default config (``shapecheck report --heads 8 --d-model 512``) next to
   ``python -c "import torch"`` and to fvcore / FlopCounterMode counting the same
   reference encoder on real CPU tensors (what they report is printed too).
Each command runs in a fresh process; the figures are medians over --repeat runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

PY = sys.executable
GPT3 = dict(layers=96, d_model=12288, heads=96, d_ff=49152, seq=2048, batch=1)

PEER = """
import sys, warnings, torch
warnings.simplefilter("ignore")
from reference_models.transformer import Encoder, TransformerConfig
model = Encoder(TransformerConfig()).eval()
x = torch.zeros(1, 128, 512)
with torch.no_grad():
    if sys.argv[1] == "fvcore":
        from fvcore.nn import FlopCountAnalysis
        a = FlopCountAnalysis(model, (x,)); a.unsupported_ops_warnings(False); a.uncalled_modules_warnings(False)
        print(2 * a.total())  # fvcore counts multiply-adds: x2 for FLOPs
    else:
        from torch.utils.flop_counter import FlopCounterMode
        with FlopCounterMode(display=False) as counter:
            model(x)
        print(counter.get_total_flops())
"""


def run(argv: list[str]) -> tuple[float, str]:
    """Wall seconds and stdout of one fresh process."""
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return wall, proc.stdout


def timed(argv: list[str], repeat: int) -> tuple[tuple[float, float], float, str]:
    """(median, minimum) wall time over ``repeat`` runs, peak RSS of one more run, the last stdout.

    The machine is shared: the minimum is the best estimate of the uncontended cost, the median of a typical one.
    """
    walls, out = [], ""
    for _ in range(repeat):
        wall, out = run(argv)
        walls.append(wall)
    return (statistics.median(walls), min(walls)), peak_rss(argv), out


def peak_rss(argv: list[str]) -> float:
    """Peak resident set size (MB) of one run of ``argv``, via os.wait4's rusage for that child alone."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_maxrss / 1024


def gpt3_closed_form() -> tuple[int, int]:
    """Parameters and matmul FLOPs of the post-norm encoder, written out by hand (not with shapecheck)."""
    L, d, f, S, B = (GPT3[k] for k in ("layers", "d_model", "d_ff", "seq", "batch"))
    per_layer = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * 2 * d  # attention, FFN, two LayerNorms
    flops = 2 * B * S * (4 * d * d + 2 * d * f) + 2 * 2 * B * S * S * d  # projections + FFN, QKᵀ + AV
    return L * per_layer, L * flops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    report = [PY, "-m", "shapecheck", "report"]
    g = GPT3
    gpt3 = report + ["--layers", str(g["layers"]), "--d-model", str(g["d_model"]), "--heads", str(g["heads"]),
                     "--d-ff", str(g["d_ff"]), "--seq-len", str(g["seq"]), "--format", "json"]
    rows = []
    wall, rss, out = timed(gpt3, args.repeat)
    data = json.loads(out)
    params, flops = gpt3_closed_form()
    exact = (data["total"]["params"] == data["total"]["measured_params"] == params
             and data["total"]["flops"] == data["total"]["measured_flops"] == flops
             and all(r["params_agree"] and r["flops_agree"] for r in data["rows"]))
    per_layer = len({r["name"].split(".")[1] for r in data["rows"] if r["name"].startswith("layers.")})
    rows.append(("report, GPT-3-sized encoder (json)", wall, rss,
                 f"exact={exact} params={params:,} flops={flops:,} layers in breakdown={per_layer} rows={len(data['rows'])}"))
    wall, rss, _ = timed(gpt3[:-2] + ["--format", "table"], args.repeat)
    rows.append(("report, GPT-3-sized encoder (table)", wall, rss, ""))
    wall, rss, _ = timed([PY, "-c", "import torch"], args.repeat)
    rows.append(('python -c "import torch" (floor)', wall, rss, ""))
    wall, rss, out = timed(report + ["--heads", "8", "--d-model", "512", "--format", "json"], args.repeat)
    ours = json.loads(out)["total"]["measured_flops"]
    rows.append(("report --heads 8 --d-model 512", wall, rss, f"flops={ours:,}"))
    for peer in ("fvcore", "flop_counter"):
        wall, rss, out = timed([PY, "-c", PEER, peer], args.repeat)
        counted = int(out.strip().splitlines()[-1])
        rows.append((f"{peer} on the same encoder (real CPU tensors)", wall, rss,
                     f"flops={counted:,} ({counted - ours:+,} against ours)"))
    print(f"{'command':<52} {'median s':>8} {'min s':>6} {'peak MB':>8}  notes")
    for name, (median, fastest), rss, note in rows:
        print(f"{name:<52} {median:8.2f} {fastest:6.2f} {rss:8.0f}  {note}")
    print(f"cpus={os.cpu_count()} repeat={args.repeat} python={sys.version.split()[0]}")


if __name__ == "__main__":
    main()
