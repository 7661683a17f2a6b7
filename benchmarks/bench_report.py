"""Wall time and peak RSS of ``shapecheck report``, against the import-torch floor and two peer counters.

    python benchmarks/bench_report.py [--repeat 3]

1. A GPT-3-sized encoder (96 layers, d_model 12288, 96 heads, d_ff 49152, seq 2048):
   the JSON report, checked exact against closed forms computed here in plain Python.
2. The default config (``shapecheck report --heads 8 --d-model 512``) next to
   ``python -c "import torch"`` and to fvcore / FlopCounterMode counting the same
   reference encoder on real CPU tensors (what they report is printed too).
3. Llama-2-70B from its published config.json (``report --config``, transformers' class on meta) and
   as ``--preset llama-2-70b`` (our reference model), next to ``python -c "import torch, transformers"``;
   the same class through FlopCounterMode (with and without shapecheck's mapping), fvcore, calflops and
   DeepSpeed's profiler where installed (optional: "not installed" otherwise), as ratios to our total.
Each command runs in a fresh process; the figures are medians over --repeat runs.
``--no-peers`` leaves out the peer counters (fvcore, FlopCounterMode, calflops, DeepSpeed): only our commands
and their import floors.
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


LLAMA_2_70B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 32000,
               "hidden_size": 8192, "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
               "intermediate_size": 28672, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
               "torch_dtype": "float16"}  # meta-llama/Llama-2-70b-hf config.json, the fields that size it
SEQ_70B = 2048

LLAMA_PEER = """
import json, sys, warnings, torch
warnings.simplefilter("ignore")
import transformers
transformers.logging.set_verbosity_error()
config = transformers.LlamaConfig(**json.load(open(sys.argv[2])))
with torch.device("meta"):
    model = transformers.LlamaForCausalLM(config)
ids = torch.zeros(1, int(sys.argv[3]), dtype=torch.long, device="meta")
peer = sys.argv[1]
if peer.startswith("flop_counter"):
    from torch.utils.flop_counter import FlopCounterMode
    mapping = {}
    if peer.endswith("+shapecheck"):
        from shapecheck.counting import flop_counter_mapping
        mapping = flop_counter_mapping()
    with FlopCounterMode(display=False, custom_mapping=mapping) as counter, torch.no_grad():
        model(ids)
    print(counter.get_total_flops())
elif peer == "fvcore":
    from fvcore.nn import FlopCountAnalysis
    a = FlopCountAnalysis(model, (ids,)); a.unsupported_ops_warnings(False); a.uncalled_modules_warnings(False)
    print(2 * a.total())
elif peer == "calflops":
    from calflops import calculate_flops
    flops, _, _ = calculate_flops(model=model, input_shape=(1, int(sys.argv[3])), output_as_string=False)
    print(int(flops))
elif peer == "deepspeed":
    from deepspeed.profiling.flops_profiler import get_model_profile
    flops, _, _ = get_model_profile(model=model, args=[ids], as_string=False, print_profile=False)
    print(int(flops))
"""
PEER_MODULES = {"flop_counter": "torch", "flop_counter+shapecheck": "torch", "fvcore": "fvcore",
                "calflops": "calflops", "deepspeed": "deepspeed"}


def try_timed(argv: list[str], repeat: int) -> tuple[tuple[float, float], float, str] | str:
    """``timed``, or the last line of the error when the command fails."""
    try:
        return timed(argv, repeat)
    except SystemExit as error:
        return str(error).strip().splitlines()[-1][-120:]


def llama_rows(report: list[str], repeat: int, peers: bool = True) -> list[tuple]:
    import importlib.util
    import tempfile

    rows = []
    config = os.path.join(tempfile.mkdtemp(), "config.json")
    with open(config, "w", encoding="utf-8") as handle:
        json.dump(LLAMA_2_70B, handle)
    wall, rss, out = timed(report + ["--config", config, "--seq-len", str(SEQ_70B), "--format", "json"], repeat)
    data = json.loads(out)
    ours = data["total"]["flops"]
    rows.append(("report --config Llama-2-70B config.json (json)", wall, rss,
                 f"ok={data['ok']} params={data['total']['params']:,} flops={ours:,}"))
    wall, rss, out = timed(report + ["--preset", "llama-2-70b", "--seq-len", str(SEQ_70B), "--format", "json"], repeat)
    preset = json.loads(out)["total"]
    rows.append(("report --preset llama-2-70b (json)", wall, rss,
                 f"params={preset['params']:,} flops={preset['flops']:,} (equal to the config's: "
                 f"{preset['params'] == data['total']['params'] and preset['flops'] == ours})"))
    config_wall = rows[0][1]
    wall, rss, _ = timed([PY, "-c", "import torch, transformers"], repeat)
    rows.append(('python -c "import torch, transformers" (floor)', wall, rss,
                 f"70B config / floor: {config_wall[0] / wall[0]:.2f}× (medians), {config_wall[1] / wall[1]:.2f}× "
                 "(minima); goal ≤ 1.5×"))
    wall, rss, _ = timed([PY, "-c", "import torch, transformers; transformers.LlamaForCausalLM"], repeat)
    rows.append(("the same + resolving LlamaForCausalLM (lazy import)", wall, rss, ""))
    for peer, module in PEER_MODULES.items() if peers else ():
        if importlib.util.find_spec(module) is None:
            rows.append((f"{peer} on Llama-2-70B (meta)", None, None, "not installed"))
            continue
        result = try_timed([PY, "-c", LLAMA_PEER, peer, config, str(SEQ_70B)], repeat)
        if isinstance(result, str):
            rows.append((f"{peer} on Llama-2-70B (meta)", None, None, f"failed: {result}"))
            continue
        (wall, rss, out) = result
        counted = int(out.strip().splitlines()[-1])
        rows.append((f"{peer} on Llama-2-70B (meta)", wall, rss, f"flops={counted:,} ratio to ours {counted / ours:.4f}"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-peers", action="store_true", help="only shapecheck's commands and the import floors")
    args = parser.parse_args()
    report = [PY, "-m", "shapecheck", "report"]
    g = GPT3
    gpt3 = report + ["--layers", str(g["layers"]), "--d-model", str(g["d_model"]), "--heads", str(g["heads"]),
                     "--d-ff", str(g["d_ff"]), "--seq-len", str(g["seq"]), "--format", "json"]
    rows = []
    wall, rss, out = timed(gpt3, args.repeat)
    data = json.loads(out)
    params, flops = gpt3_closed_form()
    exact = (data["total"]["params"] == params and data["total"]["flops"] == flops
             and all(r["agrees"] is not False for r in data["rows"]))
    compared = sum(r["agrees"] is True for r in data["rows"])
    layers = 1 + sum(r["count"] for r in data["rows"] if r["kind"] == "repeat")
    rows.append(("report, GPT-3-sized encoder (json)", wall, rss,
                 f"exact={exact} params={params:,} flops={flops:,} layers={layers} rows={len(data['rows'])} "
                 f"compared with their formula={compared}"))
    wall, rss, _ = timed(gpt3[:-2] + ["--format", "table"], args.repeat)
    rows.append(("report, GPT-3-sized encoder (table)", wall, rss, ""))
    wall, rss, _ = timed([PY, "-c", "import torch"], args.repeat)
    rows.append(('python -c "import torch" (floor)', wall, rss, ""))
    wall, rss, out = timed(report + ["--heads", "8", "--d-model", "512", "--format", "json"], args.repeat)
    ours = json.loads(out)["total"]["flops"]
    rows.append(("report --heads 8 --d-model 512", wall, rss, f"flops={ours:,}"))
    for peer in ("fvcore", "flop_counter") if not args.no_peers else ():
        wall, rss, out = timed([PY, "-c", PEER, peer], args.repeat)
        counted = int(out.strip().splitlines()[-1])
        rows.append((f"{peer} on the same encoder (real CPU tensors)", wall, rss,
                     f"flops={counted:,} ({counted - ours:+,} against ours)"))
    rows += llama_rows(report, args.repeat, not args.no_peers)
    print(f"{'command':<52} {'median s':>8} {'min s':>6} {'peak MB':>8}  notes")
    for name, walls, rss, note in rows:
        if walls is None:
            print(f"{name:<52} {'-':>8} {'-':>6} {'-':>8}  {note}")
            continue
        median, fastest = walls
        print(f"{name:<52} {median:8.2f} {fastest:6.2f} {rss:8.0f}  {note}")
    print(f"cpus={os.cpu_count()} repeat={args.repeat} python={sys.version.split()[0]}")


if __name__ == "__main__":
    main()
