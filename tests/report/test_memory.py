"""Activation memory by attention kernel: the report's figure against the bytes autograd really saves in a
CPU forward of transformers models (saved-tensor hooks, each storage once, weights left out)."""

from __future__ import annotations

import pytest
import torch

from shapecheck.counting.inputs import make_inputs
from shapecheck.counting import measure
from shapecheck.counting.tree import Settings, model_report

transformers = pytest.importorskip("transformers")

B, S = 2, 64
TINY = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=128)
CONFIGS = {
    "llama": lambda impl: transformers.LlamaConfig(**TINY, num_key_value_heads=2, attn_implementation=impl),
    "bert": lambda impl: transformers.BertConfig(**TINY, max_position_embeddings=128, attn_implementation=impl),
    "bert-no-dropout": lambda impl: transformers.BertConfig(**TINY, max_position_embeddings=128, attn_implementation=impl,
                                                           attention_probs_dropout_prob=0.0),
}
CLASSES = {"llama": "LlamaForCausalLM", "bert": "BertModel", "bert-no-dropout": "BertModel"}


def build(name: str, impl: str, device: str):
    torch.manual_seed(0)
    with torch.device(device):
        return getattr(transformers, CLASSES[name])(CONFIGS[name](impl))


def saved_on_cpu(model) -> int:
    """Bytes of the distinct storages autograd saves in one real CPU training forward, parameters excluded."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            storages.setdefault(storage.data_ptr(), storage.nbytes())
        return tensor

    args, kwargs = make_inputs(model, B, S, "cpu")
    model.train()
    keep = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: keep.append(t) or pack(t), lambda t: t):
        model(*args, **kwargs)
    return sum(storages.values())


@pytest.mark.parametrize("impl", ["sdpa", "eager"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_activations_equal_what_autograd_saves_on_cpu(name, impl):
    report = model_report(build(name, impl, "meta"), name, Settings(batch=B, seq_len=S, mode="train", device="cpu"))
    assert report.memory["activations"] == saved_on_cpu(build(name, impl, "cpu"))
    expected = "eager" if impl == "eager" else ("math" if name == "bert" else "cpu_flash")  # CPU flash: no dropout
    assert report.kernel["name"] == expected


def test_fused_kernels_keep_no_score_matrix_and_the_math_kernel_does():
    """At twice the length the math kernel's activations grow by the S×S probabilities, the fused ones linearly."""
    def activations(kernel: str, seq: int) -> int:
        s = Settings(batch=1, seq_len=seq, mode="train", device="cuda", dtype="bfloat16", attention_kernel=kernel)
        return model_report(build("llama", "sdpa", "meta"), "llama", s).memory["activations"]

    layers, heads, bf16 = TINY["num_hidden_layers"], TINY["num_attention_heads"], 2
    scores = layers * heads * (128**2 - 2 * 64**2) * bf16  # the probabilities' growth beyond linear
    for kernel in ("flash", "efficient", "cpu_flash"):
        assert abs(activations(kernel, 128) - 2 * activations(kernel, 64)) < 1024  # a few constant seeds
    assert activations("math", 128) - 2 * activations("math", 64) >= scores


@pytest.mark.parametrize("name, impl", [("llama", "sdpa"), ("llama", "eager"), ("bert", "eager")])
def test_the_live_peak_on_meta_is_a_real_cpu_steps(name, impl):
    """Forward, loss and backward on meta hold and free their tensors as a real CPU step does: the most bytes live
    at once (what train_peak adds to the weights and the optimizer) is the same to the byte."""
    s = Settings(batch=B, seq_len=S, mode="train", device="cpu")
    memory = model_report(build(name, impl, "meta"), name, s).memory
    model = build(name, impl, "cpu").train()
    args, kwargs = make_inputs(model, B, S, "cpu")
    real = measure.train(model, lambda: model(*args, **kwargs), device="cpu")
    assert memory["train_peak"] - memory["weights"] - memory["optimizer"] == real.peak
    assert real.peak >= real.activations > 0  # at the end of the forward every saved tensor is live
    assert model_report(build(name, impl, "meta"), name, Settings(batch=B, seq_len=S)).memory["train_peak"] is None


class _Temporaries(torch.nn.Module):
    """Four large tensors one after another, each freed by the next: at most two live at once."""

    def forward(self, x):
        big = x.repeat(1, 100)
        big = big * 2
        big = big + 1
        big = big * 3
        return big.sum(-1, keepdim=True) + x


def test_the_live_peak_counts_what_torch_frees():
    x = torch.ones(4, 8, requires_grad=True)
    peak = measure.train(_Temporaries(), lambda: _Temporaries()(x)).peak
    big = 4 * 800 * 4
    assert 2 * big <= peak < 3 * big  # holding every temporary would give 4 × big


def test_dropout_on_cuda_keeps_a_boolean_mask():
    """CUDA runs training dropout as the fused ``native_dropout``, which keeps a one-byte mask; the CPU (and meta)
    multiply by a mask of the input's dtype. BERT drops out its embeddings, each layer's attention probabilities,
    attention output and MLP output: every element of those masks is one byte smaller on CUDA in bfloat16."""
    def activations(device: str) -> int:
        s = Settings(batch=B, seq_len=S, mode="train", device=device, dtype="bfloat16")
        return model_report(build("bert", "eager", "meta"), "bert", s).memory["activations"]

    layers, heads, width = TINY["num_hidden_layers"], TINY["num_attention_heads"], TINY["hidden_size"]
    masked = B * S * width * (1 + 2 * layers) + layers * B * heads * S * S
    assert activations("cpu") - activations("cuda") == masked * (2 - 1)


def test_grouped_heads_in_float32_on_cuda_take_the_math_kernel():
    """Llama calls SDPA with ``enable_gqa`` (2 key heads for 4 query heads). In float32 on CUDA the flash kernels
    are out and the memory-efficient one takes no grouped heads, so torch runs math, which keeps the S×S
    probabilities like eager attention (on an H200, torch 2.11: the same step peak as eager to 0.1%)."""
    def report(impl: str, dtype: str):
        s = Settings(batch=B, seq_len=S, mode="train", device="cuda", dtype=dtype)
        return model_report(build("llama", impl, "meta"), "llama", s)

    grouped = report("sdpa", "float32")
    assert grouped.kernel["name"] == "math"
    assert grouped.memory["activations"] == report("eager", "float32").memory["activations"]
    assert report("sdpa", "bfloat16").kernel["name"] == "flash"  # the flash kernels read shared heads
