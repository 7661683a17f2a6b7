"""What makes ``report`` fast must not change a number: shape-only kernels, lazy imports, reused layers, the collector."""

from __future__ import annotations

import dataclasses
import gc
import json
import subprocess
import sys

import pytest
import torch
from torch import nn

from shapecheck.catalog import build_on_meta, preset_sizes
from shapecheck.counting import meta
from shapecheck.counting.anatomy import parts
from shapecheck.counting.dispatch import count_flops
from shapecheck.counting.experts import routed
from shapecheck.counting.repeats import count_with_repeats, identical_stacks
from shapecheck.counting.tree import Settings, model_report

aten = torch.ops.aten


def _m(*shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype, device="meta")


MASK = _m(1, 1, 5, 5, dtype=torch.bool)
# (op, args, kwargs): every shape-only kernel, on the inputs models give it and on awkward ones.
CASES = [
    (aten.arange.default, (7,), {}),
    (aten.arange.default, (0,), {}),
    (aten.arange.start, (2, 9), {"dtype": torch.float32}),
    (aten.arange.start_step, (0, 64, 2), {}),
    (aten.arange.start_step, (0, 63, 2), {"dtype": torch.int32}),
    (aten.arange.start_step, (10, 0, -3), {}),
    (aten.arange.start_step, (0, 7, 2.5), {}),  # float bounds: the real kernel
    (aten.cat.default, ([_m(2, 3, 4), _m(2, 5, 4)], 1), {}),
    (aten.cat.default, ([_m(2, 3), _m(2, 3)], -1), {}),
    (aten.cat.default, ([_m(2, 3), _m(0, dtype=torch.float32)],), {}),  # legacy empty 1-D: the real kernel
    (aten.cat.default, ([_m(2, 3), _m(2, 3, dtype=torch.float16)],), {}),  # mixed dtypes: the real kernel
    (aten.where.self, (MASK, _m(2, 4, 5, 5), _m(1)), {}),
    (aten.where.self, (MASK, _m(2, 4, 5, 5), _m(1, dtype=torch.float16)), {}),
    (aten.masked_fill.Scalar, (_m(2, 4, 5, 5), MASK, float("-inf")), {}),
    (aten.masked_fill.Scalar, (_m(1, 1, 5, 5), _m(2, 4, 5, 5, dtype=torch.bool), 0.0), {}),  # broadcasts self
    (aten.tril.default, (_m(5, 5, dtype=torch.bool),), {}),
    (aten.triu.default, (_m(3, 5, 5), 1), {}),
    (aten.bitwise_not.default, (MASK,), {}),
    (aten.pow.Scalar, (10000.0, _m(8)), {}),
    (aten.pow.Scalar, (2, _m(8, dtype=torch.int64)), {}),
    (aten.cos.default, (_m(6, 8),), {}),
    (aten.sin.default, (_m(6, 8, dtype=torch.int64),), {}),  # integer input, float output: the real kernel
    (aten.abs.default, (_m(3),), {}),
    (aten.add.Tensor, (_m(6, 1, dtype=torch.int64), _m(8, dtype=torch.int64)), {}),
    (aten.sub.Tensor, (_m(6, dtype=torch.int32), _m(6, dtype=torch.int32)), {"alpha": 2}),
    (aten.mul.Tensor, (_m(6, 1, dtype=torch.int64), _m(1, 8, dtype=torch.int64)), {}),
    (aten.add.Tensor, (_m(6, dtype=torch.int32), _m(6, dtype=torch.int64)), {}),  # promotion: the real kernel
    (aten.embedding.default, (_m(50, 16), _m(2, 7, dtype=torch.int64)), {}),
    (aten.embedding.default, (_m(50, 16, dtype=torch.float16), _m(7, dtype=torch.int64), 0), {}),
]


@pytest.mark.parametrize("op, args, kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_shape_only_kernel_gives_the_real_kernels_shape_and_dtype(op, args, kwargs):
    kwargs = {**kwargs, "device": "meta"} if "arange" in str(op) else kwargs
    real = op(*args, **kwargs)
    quick = meta.shortcut(op, args, kwargs)
    if quick is not None:  # None: no shortcut, the real kernel runs
        assert (tuple(quick.shape), quick.dtype, quick.device.type) == (tuple(real.shape), real.dtype, "meta")


@pytest.mark.parametrize("op, args, kwargs", [
    (aten.arange.start_step, (0, 5, 0), {"device": "meta"}),  # step 0
    (aten.arange.start_step, (5, 0, 1), {"device": "meta"}),  # sign against the bounds
    (aten.sub.Tensor, (_m(3, dtype=torch.bool), _m(3, dtype=torch.bool)), {}),
    (aten.sub.Tensor, (_m(3, dtype=torch.int64), _m(3, dtype=torch.int64)), {"alpha": 0.5}),
    (aten.cat.default, ([_m(2, 3), _m(3, 2)],), {}),
])
def test_what_torch_refuses_is_left_to_torch(op, args, kwargs):
    assert meta.shortcut(op, args, kwargs) is None
    with pytest.raises((RuntimeError, ValueError)):
        op(*args, **kwargs)


def _records(count):
    return sorted(count.records, key=repr), {op: dict(c) for op, c in count.uncounted.items()}, dict(count.elementwise)


@pytest.mark.parametrize("preset", ["llama-2-7b", "mixtral-8x7b", "gpt2", "bert-base", "qwen2-0.5b"])
def test_counting_with_shape_only_kernels_equals_counting_with_torchs_meta_kernels(preset):
    module = build_on_meta(preset, preset_sizes(preset, d_model=64, heads=4))
    module.eval()
    ids = torch.zeros(2, 9, dtype=torch.long, device="meta")
    paths = [p for p, m in module.named_modules() if type(m).__name__.endswith("Attention")]
    moe = {module.get_submodule(p): part.sizes["k"] for p, part in parts(module).items() if part.kind == "moe"}
    with torch.no_grad(), routed(moe):
        fast = count_flops(lambda: module(ids), module, paths, fast_meta=True)
        slow = count_flops(lambda: module(ids), module, paths, fast_meta=False)
    assert _records(fast) == _records(slow)


REPORT_RUN = """
import atexit, json, runpy, sys
heavy = lambda: sorted(m for m in ("torch._dynamo", "triton", "tabulate") if m in sys.modules)
atexit.register(lambda: print("imported:", json.dumps(heavy()), flush=True))
sys.argv = ["shapecheck", "report", "--preset", "llama-2-7b", "--format", "json"]
runpy.run_module("shapecheck", run_name="__main__")
"""


def test_a_report_on_meta_imports_neither_dynamo_nor_triton_and_ends_after_its_output():
    """torch._dynamo (~0.6 s, and tabulate at exit) comes with any torch._refs kernel; triton with flop_counter.

    The CLI ends without the interpreter's teardown: its JSON is complete and the atexit handlers have run.
    """
    done = subprocess.run([sys.executable, "-c", REPORT_RUN], capture_output=True, text=True)
    report, _, last = done.stdout.rpartition("imported:")
    assert done.returncode == 0 and json.loads(last) == []
    assert json.loads(report)["total"]["params"] == 6_738_415_616


def test_flop_counters_jit_function_check_answers_as_tritons_class():
    from torch.utils import flop_counter

    assert not isinstance(object(), flop_counter._JITFunction)
    assert not isinstance(torch.ops.aten.mm, flop_counter._JITFunction)
    triton = pytest.importorskip("triton")

    @triton.jit
    def kernel(x):
        pass

    assert isinstance(kernel, flop_counter._JITFunction)


def _collecting(module: nn.Module):
    """A forward pre-hook on every Linear that runs the garbage collector: freed storages get reused."""
    def collect(*_):
        gc.collect()  # returns None: the inputs go on unchanged

    return [m.register_forward_pre_hook(collect) for m in module.modules() if isinstance(m, nn.Linear)]


def test_saved_activations_do_not_depend_on_when_the_collector_runs():
    sizes = dataclasses.replace(preset_sizes("mixtral-8x7b", probe=True), layers=2, kv_heads=2)
    module, name = build_on_meta("mixtral-8x7b", sizes), "mixtral"
    settings = Settings(mode="train", seq_len=16)
    gc.disable()
    try:
        quiet = model_report(module, name, settings).memory["activations"]
    finally:
        gc.enable()
    handles = _collecting(module)
    try:
        busy = model_report(module, name, settings).memory["activations"]
    finally:
        for handle in handles:
            handle.remove()
    assert quiet == busy > 0


class _Scaled(nn.Module):
    """A layer whose ops depend on a plain attribute: ``extra`` more matmuls."""

    def __init__(self, d: int, extra: int) -> None:
        super().__init__()
        self.proj, self.extra = nn.Linear(d, d), extra

    def forward(self, x):
        for _ in range(1 + self.extra):
            x = self.proj(x)
        return x


class _Stack(nn.Module):
    def __init__(self, extras: list[int], d: int = 8) -> None:
        super().__init__()
        self.layers = nn.ModuleList(_Scaled(d, e) for e in extras)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


@pytest.mark.parametrize("extras, folded", [([0, 0, 0, 0], True), ([0, 0, 2, 0], False), ([1, 0, 0, 0], False)])
def test_a_stack_is_counted_once_only_when_its_layers_are_identical(extras, folded):
    with torch.device("meta"):
        model = _Stack(extras)
    x = torch.zeros(2, 3, 8, device="meta")
    with torch.no_grad():
        reused, stacks = count_with_repeats(lambda: model(x), model)
        every = count_flops(lambda: model(x), model)
    assert bool(stacks) is folded
    assert reused.by_module() == every.by_module()
    assert reused.total == every.total == 2 * 2 * 3 * 8 * 8 * (len(extras) + sum(extras))


def test_transformers_layers_are_counted_once_when_their_index_goes_unused():
    """Their attention keeps ``layer_idx`` (the KV cache's slot), which a forward without a cache never reads:
    layer 0 is counted and reused, and the count equals counting every layer."""
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                                      num_attention_heads=4, num_key_value_heads=2, vocab_size=64)
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config)
    tokens = torch.zeros(2, 5, dtype=torch.long, device="meta")
    with torch.no_grad():
        reused, stacks = count_with_repeats(lambda: model(tokens), model)
        every = count_flops(lambda: model(tokens), model)
    assert [(s.path, s.size, s.watched) for s in stacks] == [("model.layers", 3, (("self_attn", "layer_idx"),))]
    assert reused.by_module() == every.by_module() and reused.total == every.total > 0


class _Indexed(nn.Module):
    """A layer whose ops depend on its own index (``index + 1`` matmuls), a plain integer attribute."""

    def __init__(self, d: int, index: int) -> None:
        super().__init__()
        self.proj, self.index = nn.Linear(d, d), index

    def forward(self, x):
        for _ in range(self.index + 1):
            x = self.proj(x)
        return x


class _Silent(_Indexed):
    """The same index, never read."""

    def forward(self, x):
        return self.proj(x)


@pytest.mark.parametrize("layer, folded", [(_Indexed, False), (_Silent, True)])
def test_a_layer_index_is_watched_not_trusted(layer, folded):
    """Layers that differ only in an integer are counted once only when the forward never uses that integer."""
    with torch.device("meta"):
        model = nn.ModuleList(layer(8, i) for i in range(4))
    x = torch.zeros(2, 3, 8, device="meta")

    def run():
        y = x
        for block in model:
            y = block(y)
        return y

    with torch.no_grad():
        reused, stacks = count_with_repeats(run, model)
        every = count_flops(run, model)
    assert bool(stacks) is folded
    assert reused.by_module() == every.by_module()
    matmuls = 4 if folded else sum(i + 1 for i in range(4))
    assert reused.total == every.total == 2 * 2 * 3 * 8 * 8 * matmuls
