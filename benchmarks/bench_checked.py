"""Per-call cost of runtime shape checks on MultiHeadAttention (d_model 512, 8 heads).

Interleaved runs, median per variant:
- checked: ``MultiHeadAttention`` as shipped (@checked on forward);
- unwrapped: the same module and weights, called through ``nn.Module.__call__``, with forward set to
  the original function (``forward.__wrapped__``): exactly what SHAPECHECK_DISABLE=1 gives;
- env-off: a subprocess with SHAPECHECK_DISABLE=1 (forward is the original function object);
- torch: ``nn.MultiheadAttention`` with the same sizes and weights.
Modes: inference (eval + no_grad, where torch takes its fused fast path) and autograd (eval, grad on).
``--device cuda`` runs on the GPU (bf16, synchronised timings); ``--compile`` compiles every variant with
``torch.compile`` first, so the check cost column is the compiled checked module against the compiled
unwrapped one (the checks run while tracing; a compiled call should pay nothing for them).

    python benchmarks/bench_checked.py [--repeats 400] [--device cpu|cuda] [--compile]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
from torch import nn

SHAPES = [(1, 8), (8, 512)]


DEVICE, DTYPE, COMPILE = torch.device("cpu"), torch.float32, False


def _modules():
    from reference_models import MultiHeadAttention

    torch.manual_seed(0)
    ours = MultiHeadAttention(512, 8).eval().to(DEVICE, DTYPE)
    theirs = nn.MultiheadAttention(512, 8, batch_first=True).eval().to(DEVICE, DTYPE)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        theirs.out_proj.load_state_dict(ours.out_proj.state_dict())
    return ours, theirs


def _unwrapped(ours):
    """The same module and weights with forward set to the original function (what the env switch gives)."""
    forward = type(ours).forward
    original = getattr(forward, "__wrapped__", forward)
    plain = type("Unchecked" + type(ours).__name__, (type(ours),), {"forward": original})
    twin = plain.__new__(plain)
    twin.__dict__ = ours.__dict__  # shares parameters and submodules
    return twin


def _variants(ours, theirs):
    twin = _unwrapped(ours)
    if COMPILE:
        ours, twin, theirs = (torch.compile(m) for m in (ours, twin, theirs))
    return {
        "checked": lambda x: ours(x),
        "unwrapped": lambda x: twin(x),
        "torch": lambda x: theirs(x, x, x, need_weights=False)[0],
    }


def _sync() -> None:
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def _time(variants, x, repeats, grad):
    samples = {name: [] for name in variants}
    context = torch.enable_grad if grad else torch.no_grad
    with context():
        for fn in variants.values():
            for _ in range(10):
                fn(x)
        order = list(variants.items())
        for i in range(repeats):
            for name, fn in order[i % len(order) :] + order[: i % len(order)]:  # rotate: no variant always follows torch
                _sync()
                start = time.perf_counter()
                fn(x)
                _sync()
                samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(s) * 1e6 for name, s in samples.items()}


def measure(repeats: int) -> dict:
    """Medians per shape and mode. Check cost interleaves checked with unwrapped only; the torch
    comparison interleaves checked with torch (running torch's kernels between two of ours slows the
    next call by cache effects, which would blur a difference of a few microseconds)."""
    ours, theirs = _modules()
    variants = _variants(ours, theirs)
    own = {k: variants[k] for k in ("checked", "unwrapped")}
    peer = {k: variants[k] for k in ("checked", "torch")}
    results = {}
    for batch, seq in SHAPES:
        x = torch.randn(batch, seq, 512, device=DEVICE, dtype=DTYPE)
        n = repeats if seq <= 64 else max(repeats // 20, 20)
        for grad in (False, True):
            row = _time(own, x, n, grad)
            versus = _time(peer, x, n, grad)
            row["torch"], row["checked vs torch"] = versus["torch"], versus["checked"]
            results[f"{batch}x{seq} {'autograd' if grad else 'inference'}"] = row
    return results


def _env_off(repeats: int) -> dict:
    code = (
        "import json, sys, torch; sys.path.insert(0, 'benchmarks');"
        "import bench_checked as b, reference_models.attention as a;"
        "assert not hasattr(a.MultiHeadAttention.forward, '__wrapped_by_shapecheck__');"
        f"b.DEVICE, b.DTYPE, b.COMPILE = torch.device({DEVICE.type!r}), {DTYPE}, {COMPILE};"
        f"print(json.dumps(b.measure({repeats})))"
    )
    env = {**os.environ, "SHAPECHECK_DISABLE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=400)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--compile", action="store_true", help="torch.compile every variant first")
    args = parser.parse_args()
    global DEVICE, DTYPE, COMPILE
    DEVICE = torch.device(args.device)
    DTYPE = torch.bfloat16 if DEVICE.type == "cuda" else torch.float32
    COMPILE = args.compile
    where = torch.cuda.get_device_name() if DEVICE.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"torch {torch.__version__}, {where}, {DTYPE}, {'compiled' if COMPILE else 'eager'}; median microseconds per call")
    on = measure(args.repeats)
    off = _env_off(args.repeats)
    header = f"{'shape / mode':<24}{'checked':>10}{'unwrapped':>11}{'env-off':>10}{'torch':>10}{'check cost':>12}{'ours/torch':>12}"
    print(header)
    for key, row in on.items():
        cost = row["checked"] / row["unwrapped"] - 1
        ratio = row["checked vs torch"] / row["torch"]
        print(
            f"{key:<24}{row['checked']:>10.1f}{row['unwrapped']:>11.1f}{off[key]['checked']:>10.1f}"
            f"{row['torch']:>10.1f}{cost:>+12.1%}{ratio:>12.2f}"
        )


if __name__ == "__main__":
    main()
