"""Activation memory of a training step: ``shapecheck report``'s figure against what autograd saves on the CPU.

    python benchmarks/bench_report_memory.py

For transformers' Llama (grouped-query, SDPA or eager) and BERT (SDPA with attention dropout, which torch runs
on its math kernel, SDPA without it, and eager), built from small configs: the report's activations
(measured on meta, each SDPA call run by the kernel torch picks on ``--device cpu``), the same with
``--attention-kernel math`` (what every SDPA model was given before kernels were told apart), and the bytes
autograd really saves in one CPU training forward (saved-tensor hooks, each storage once, weights left out).
CPU only: no GPU was measured here.
"""

from __future__ import annotations

import torch
import transformers

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


def build(name: str, device: str):
    cls, config = MODELS[name]
    torch.manual_seed(0)
    with torch.device(device):
        return getattr(transformers, cls)(config())


def saved_on_cpu(model, batch: int, seq: int) -> int:
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}
    keep = []

    def pack(tensor):
        keep.append(tensor)
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            storages.setdefault(storage.data_ptr(), storage.nbytes())
        return tensor

    args, kwargs = make_inputs(model, batch, seq, "cpu")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model.train()(*args, **kwargs)
    return sum(storages.values())


def main() -> None:
    print("| model | batch × seq | kernel assumed | report (MB) | math-kernel figure (MB) | autograd saves on CPU (MB) | report / measured |")
    print("|---|---|---|---|---|---|---|")
    for name in MODELS:
        for batch, seq in SHAPES:
            settings = Settings(batch=batch, seq_len=seq, mode="train", device="cpu")
            report = model_report(build(name, "meta"), name, settings)
            math = model_report(build(name, "meta"), name, Settings(**{**settings.__dict__, "attention_kernel": "math"}))
            measured = saved_on_cpu(build(name, "cpu"), batch, seq)
            predicted = report.memory["activations"]
            print(f"| {name} | {batch} × {seq} | {report.kernel['name']} | {predicted / 1e6:.1f} | "
                  f"{math.memory['activations'] / 1e6:.1f} | {measured / 1e6:.1f} | {predicted / measured:.3f} |")


if __name__ == "__main__":
    main()
