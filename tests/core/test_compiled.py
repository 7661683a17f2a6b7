"""``@checked`` under ``torch.compile``: the checks run while tracing, a compiled call runs no check code,
and ``fullgraph=True`` works on a module that never ran eagerly."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch._dynamo
from jaxtyping import Float
from torch import Tensor

import shapecheck
from reference_models import MultiHeadAttention
from reference_models.bert import BertConfig, BertModel
from shapecheck import ShapeError

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _bert() -> BertModel:
    torch.manual_seed(0)
    return BertModel(BertConfig(vocab=50, d_model=16, heads=2, layers=1, d_ff=32, max_seq=32)).eval()


def test_fullgraph_compiles_a_checked_model_before_any_eager_call():
    model = _bert()
    ids = torch.randint(50, (2, 6))
    compiled = torch.compile(model, fullgraph=True, backend="eager")
    with torch.no_grad():
        got = compiled(ids)
        want = model(ids)
    assert all(torch.equal(a, b) for a, b in zip(got, want))


def test_one_graph_and_no_break():
    explained = torch._dynamo.explain(_bert())(torch.randint(50, (2, 6)))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons


def test_a_compiled_call_runs_no_check_code(monkeypatch):
    """After the trace, calls run the graph: the checker's matcher is never entered again."""
    module = MultiHeadAttention(16, 2).eval()
    compiled = torch.compile(module, backend="eager")
    x = torch.randn(2, 5, 16)
    compiled(x)
    calls = []
    match = shapecheck.shapes.ArraySpec.match
    monkeypatch.setattr(shapecheck.shapes.ArraySpec, "match", lambda *a: calls.append(1) or match(*a))
    for _ in range(3):
        compiled(x)
    eager_calls = len(calls)
    assert eager_calls == 0 or torch._dynamo.utils.counters["stats"]["unique_graphs"] > 1
    module(x)  # the eager path does check
    assert len(calls) > eager_calls


def test_tracing_writes_nothing_on_the_module():
    """A write during tracing would be replayed after every compiled call."""
    module = MultiHeadAttention(16, 2).eval()
    torch.compile(module, fullgraph=True, backend="eager")(torch.randn(2, 5, 16))
    assert not [name for name in vars(module) if name.startswith("_shapecheck")]
    module(torch.randn(2, 5, 16))  # an eager call caches the owner's sizes (what the test above rules out)
    assert [name for name in vars(module) if name.startswith("_shapecheck")]


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_wrong_shape_still_fails_when_compiled(dynamic):
    module = MultiHeadAttention(16, 2).eval()
    compiled = torch.compile(module, backend="eager", dynamic=dynamic)
    compiled(torch.randn(2, 5, 16))
    with pytest.raises(ShapeError, match=r"query.shape\[2\] is 8, but d_model=16"):
        compiled(torch.randn(2, 5, 8))


def _guarded(module, *args) -> list[str]:
    return [guard.name for guard in torch._dynamo.explain(module)(*args).out_guards]


def test_a_compiled_call_guards_nothing_of_the_contract():
    """Static sizes are checked in plain Python while tracing and folded in as a constant: the graph's guards
    cover what the forward reads and the sizes the contract binds (the config's d_model), never the contract's
    own tables (its parameters, their matchers, the vocabulary) that a compiled call would re-check every time."""
    module = MultiHeadAttention(16, 2).eval()
    x = torch.randn(2, 5, 16)
    checked = _guarded(module, x)
    torch._dynamo.reset()
    module.forward = type(module).forward.__wrapped__.__get__(module)
    unwrapped = _guarded(module, x)
    assert not [g for g in checked if any(part in g for part in ("'sig'", ".params", ".spec", "AXES", "_ATTRIBUTES"))]
    assert len(checked) - len(unwrapped) < 50, (len(checked), len(unwrapped))  # 45: the helpers' code, the bound sizes


def test_a_new_bound_size_recompiles_and_is_checked():
    """The size the contract binds from the config is guarded: changed after a compiled call, the next call
    is traced again and checked against it, not served by the old graph."""
    module = MultiHeadAttention(16, 2).eval()
    compiled = torch.compile(module, backend="eager")
    x = torch.randn(2, 5, 16)
    compiled(x)
    module.config = dataclasses.replace(module.config, d_model=8)
    with pytest.raises(ShapeError, match=r"query.shape\[2\] is 16, but d_model=8"):
        compiled(x)


def _graphs(module, shapes, **options) -> int:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(module, backend="eager", **options)
    for shape in shapes:
        compiled(torch.randn(*shape))
    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


@pytest.mark.parametrize("options", [{"dynamic": True}, {}])
def test_symbolic_sizes_stay_symbolic(options):
    """Checks never specialise a size dynamo made symbolic: the checked module compiles as many graphs over
    new shapes as the unwrapped one (1 with dynamic=True; 2 with automatic dynamic shapes)."""
    shapes = [(2, 5, 16), (3, 7, 16), (4, 9, 16), (5, 3, 16)]
    checked = MultiHeadAttention(16, 2).eval()
    unwrapped = MultiHeadAttention(16, 2).eval()
    unwrapped.forward = type(unwrapped).forward.__wrapped__.__get__(unwrapped)
    assert _graphs(checked, shapes, **options) == _graphs(unwrapped, shapes, **options) <= 2


class _Returns(torch.nn.Module):
    """Annotated to return (batch, seq, d_model) with d_model from ``self.embed_dim``; returns the wrong width."""

    def __init__(self, embed_dim: int, wrong: bool) -> None:
        super().__init__()
        self.embed_dim, self.wrong = embed_dim, wrong
        self.proj = torch.nn.Linear(embed_dim, embed_dim + 1 if wrong else embed_dim)

    @shapecheck.checked
    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        return self.proj(x)


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_wrong_return_or_attribute_size_fails_when_compiled(dynamic):
    right = torch.compile(_Returns(8, wrong=False), backend="eager", dynamic=dynamic)
    assert right(torch.randn(2, 3, 8)).shape == (2, 3, 8)
    with pytest.raises(ShapeError, match=r"x.shape\[2\] is 4, but d_model=8"):
        right(torch.randn(2, 3, 4))
    torch._dynamo.reset()
    wrong = torch.compile(_Returns(8, wrong=True), backend="eager", dynamic=dynamic)
    with pytest.raises(ShapeError, match=r"return value.shape\[2\] is 9, but d_model=8"):
        wrong(torch.randn(2, 3, 8))


def test_the_constant_mark_is_the_one_torch_sets():
    """``runtime._constant_result`` marks a function as ``torch.compiler.assume_constant_result`` does (it sets the
    mark itself so that importing shapecheck does not import dynamo): a torch that marks another way fails here."""
    from shapecheck import runtime

    def ours():
        return 1

    def theirs():
        return 1

    runtime._constant_result(ours)
    torch.compiler.assume_constant_result(theirs)
    assert vars(ours) == vars(theirs) == {"_dynamo_marked_constant": True}
