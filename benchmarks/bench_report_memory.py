"""Activation and training-step memory: ``shapecheck report``'s figures against what torch really uses.

    python benchmarks/bench_report_memory.py [--device cpu|cuda]

For transformers' Llama (grouped-query, SDPA or eager) and BERT (SDPA with attention dropout, SDPA without it,
and eager), built from small configs (d_model 256, 4 layers, 8 heads, vocab 1000):

- ``--device cpu`` (default): the report's activations (measured on meta, each SDPA call run by the kernel
  torch picks on the CPU), the same with ``--attention-kernel math`` (what every SDPA model was given before
  kernels were told apart), and the bytes autograd really saves in one CPU training forward (saved-tensor
  hooks, each storage once, weights left out).
- ``--device cuda``: two tables. Activations in bfloat16: report ``--device cuda --dtype bfloat16`` against the
  bytes autograd saves in one bfloat16 training forward on the GPU, with the SDPA kernel torch really ran
  (read from the aten ops dispatched) beside the kernel report assumed. A training step in float32: report's
  ``train_peak`` against ``torch.cuda.max_memory_allocated`` over the second step of AdamW (fused; the first
  step allocates its moments), the loss the model's own (``labels=``) or, without one, the mean of its output.
  The peak also holds cuBLAS's workspaces, which report leaves out: a column subtracts what the allocator holds
  before the step besides the weights and Adam's moments.
  Then, for each kind of SDPA call, the kernel torch runs on this GPU beside the one report assumes.
"""

from __future__ import annotations

import argparse
import gc

import torch
import transformers
from torch.utils._python_dispatch import TorchDispatchMode

from shapecheck.counting.inputs import make_inputs
from shapecheck.counting.tree import Settings, model_report

SIZES = dict(hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=8, vocab_size=1000)
MODELS = {
    "llama sdpa": ("LlamaForCausalLM", lambda: transformers.LlamaConfig(**SIZES, num_key_value_heads=2, attn_implementation="sdpa")),
    "llama eager": ("LlamaForCausalLM", lambda: transformers.LlamaConfig(**SIZES, num_key_value_heads=2, attn_implementation="eager")),
    "bert sdpa": ("BertModel", lambda: transformers.BertConfig(**SIZES, max_position_embeddings=1024, attn_implementation="sdpa")),
    "bert sdpa, no attention dropout": ("BertModel", lambda: transformers.BertConfig(
        **SIZES, max_position_embeddings=1024, attn_implementation="sdpa", attention_probs_dropout_prob=0.0)),
    "bert eager": ("BertModel", lambda: transformers.BertConfig(**SIZES, max_position_embeddings=1024, attn_implementation="eager")),
}
SHAPES = [(2, 512), (1, 1024)]
CUDA_SHAPES = SHAPES + [(8, 1024)]
KERNEL_OPS = {  # the aten op each SDPA kernel dispatches to, and report's name for the kernel
    "_scaled_dot_product_flash_attention": "flash",
    "_scaled_dot_product_efficient_attention": "efficient",
    "_scaled_dot_product_cudnn_attention": "cudnn",
    "_scaled_dot_product_flash_attention_for_cpu": "cpu_flash",
}


def build(name: str, device: str, dtype: torch.dtype = torch.float32):
    cls, config = MODELS[name]
    torch.manual_seed(0)
    with torch.device(device):
        return getattr(transformers, cls)(config()).to(dtype)


def report(name: str, batch: int, seq: int, **settings):
    return model_report(build(name, "meta"), name, Settings(batch=batch, seq_len=seq, mode="train", **settings))


class _Kernels(TorchDispatchMode):
    """The SDPA kernels a forward really runs (eager attention runs none)."""

    def __init__(self):
        super().__init__()
        self.seen: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kernel = KERNEL_OPS.get(func.overloadpacket.__name__)
        if kernel:
            self.seen.add(kernel)
        return func(*args, **(kwargs or {}))


def saved(model, batch: int, seq: int, device: str) -> tuple[int, str]:
    """Bytes autograd saves in one training forward (each storage once, weights left out), and the fused SDPA
    kernels that forward ran (eager attention and SDPA's math kernel decompose into ordinary ops)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}
    keep: list[torch.Tensor] = []

    def pack(tensor):
        keep.append(tensor)
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            storages.setdefault(storage.data_ptr(), storage.nbytes())
        return len(keep) - 1  # the graph holds an index into ``keep``

    args, kwargs = make_inputs(model, batch, seq, device)
    kernels = _Kernels()
    with torch.autograd.graph.saved_tensors_hooks(pack, keep.__getitem__), kernels:
        model.train()(*args, **kwargs)
    keep.clear()  # the tensors hold the graph that holds the unpack hook that holds ``keep``: a cycle otherwise
    return sum(storages.values()), ", ".join(sorted(kernels.seen)) or "no fused kernel"


def step_peak(name: str, batch: int, seq: int) -> tuple[int, int]:
    """torch.cuda.max_memory_allocated over the second float32 training step (AdamW, fused), and the bytes held
    before it besides the weights and Adam's moments (cuBLAS's workspaces, which the allocator counts)."""
    model = build(name, "cuda").train()
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    args, kwargs = make_inputs(model, batch, seq, "cuda")
    if MODELS[name][0].endswith("ForCausalLM"):
        kwargs = {**kwargs, "labels": args[0]}

    def step():
        out = model(*args, **kwargs)
        loss = out.loss if getattr(out, "loss", None) is not None else out[0].float().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    expected = sum(p.numel() * p.element_size() * 3 for p in model.parameters())  # weights and Adam's moments
    if before - expected > 2**27:  # cuBLAS keeps a workspace per handle in the allocator (about 68 MB on an H200)
        print(f"warning: {name} {batch} × {seq}: {(before - expected) / 1e6:.1f} MB held besides the model and its "
              "optimizer before the step (a leak would inflate the peak)")
    del model, optimizer
    gc.collect()
    torch.cuda.empty_cache()
    return peak, before - expected


def cpu_table() -> None:
    print("| model | batch × seq | kernel assumed | report (MB) | math-kernel figure (MB) | autograd saves on CPU (MB) | report / measured |")
    print("|---|---|---|---|---|---|---|")
    for name in MODELS:
        for batch, seq in SHAPES:
            ours = report(name, batch, seq, device="cpu")
            math = report(name, batch, seq, device="cpu", attention_kernel="math")
            measured, _ = saved(build(name, "cpu"), batch, seq, "cpu")
            predicted = ours.memory["activations"]
            print(f"| {name} | {batch} × {seq} | {ours.kernel['name']} | {predicted / 1e6:.1f} | "
                  f"{math.memory['activations'] / 1e6:.1f} | {measured / 1e6:.1f} | {predicted / measured:.3f} |")


def kernel_choices() -> None:
    """The SDPA kernel torch runs for each kind of call on this GPU, beside the one ``kernels.choose`` assumes."""
    from shapecheck.counting.kernels import choose

    print("\nSDPA kernel by call (batch 2, 8 heads, 256 tokens, training forward):\n")
    print("| dtype | d_head | key heads | mask | dropout | causal | torch ran | report assumes |")
    print("|---|---|---|---|---|---|---|---|")
    calls = ((8, False, 0.0, False), (8, False, 0.0, True), (8, False, 0.1, False), (8, True, 0.0, False),
             (2, False, 0.0, True))  # key heads (2: grouped, enable_gqa), mask, dropout, causal
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for d_head in (64, 128, 256):
            for key_heads, masked, dropout, causal in calls:
                q = torch.randn(2, 8, 256, d_head, device="cuda", dtype=dtype, requires_grad=True)
                k, v = (torch.randn(2, key_heads, 256, d_head, device="cuda", dtype=dtype, requires_grad=True)
                        for _ in range(2))
                mask = torch.ones(256, 256, device="cuda", dtype=torch.bool).tril() if masked else None
                kernels = _Kernels()
                with kernels:
                    torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout,
                                                                     is_causal=causal, enable_gqa=key_heads != 8)
                ran = ", ".join(sorted(kernels.seen)) or "math"
                assumed = choose("cuda", dtype, dropout, masked, d_head, grouped=key_heads != 8)
                print(f"| {str(dtype)[6:]} | {d_head} | {key_heads} | {'bool' if masked else '-'} | {dropout} | "
                      f"{causal} | {ran} | {assumed} |")


def cuda_tables() -> None:
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.cuda.get_device_name()}")
    print("\nActivations, bfloat16 (report --device cuda --dtype bfloat16 against autograd's saved tensors on the GPU):\n")
    print("| model | batch × seq | kernel assumed | kernel run | report (MB) | autograd saves on GPU (MB) | report / measured |")
    print("|---|---|---|---|---|---|---|")
    for name in MODELS:
        for batch, seq in CUDA_SHAPES:
            ours = report(name, batch, seq, device="cuda", dtype="bfloat16")
            measured, ran = saved(build(name, "cuda", torch.bfloat16), batch, seq, "cuda")
            predicted = ours.memory["activations"]
            print(f"| {name} | {batch} × {seq} | {ours.kernel['name']} | {ran} | {predicted / 1e6:.1f} | "
                  f"{measured / 1e6:.1f} | {predicted / measured:.3f} |")
            torch.cuda.empty_cache()
    print("\nTraining step, float32 (report's train_peak against torch.cuda.max_memory_allocated, AdamW fused):\n")
    print("| model | batch × seq | activations (MB) | report train_peak (MB) | measured peak (MB) | report / measured | "
          "measured less cuBLAS's workspaces (MB) | report / that |")
    print("|---|---|---|---|---|---|---|---|")
    for name in MODELS:
        for batch, seq in CUDA_SHAPES:
            memory = report(name, batch, seq, device="cuda", dtype="float32").memory
            peak, workspaces = step_peak(name, batch, seq)
            predicted = memory["train_peak"]
            print(f"| {name} | {batch} × {seq} | {memory['activations'] / 1e6:.1f} | {predicted / 1e6:.1f} | "
                  f"{peak / 1e6:.1f} | {predicted / peak:.3f} | {(peak - workspaces) / 1e6:.1f} | "
                  f"{predicted / (peak - workspaces):.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("bench_report_memory: --device cuda needs a GPU; torch sees none")
    if args.device == "cuda":
        cuda_tables()
        kernel_choices()
    else:
        cpu_table()


if __name__ == "__main__":
    main()
