"""What prove reports: annotation disagreements, silent specialisation, readable constraints and failures."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from jaxtyping import Float
from torch import Tensor, nn

from shapecheck import checked
from shapecheck.prove import prove

D = 4
SYMBOL = re.compile(r"\b[su]\d+\b")  # export's raw size symbols must never reach a message


class Swapped(nn.Module):
    """Annotated (batch, seq, d_model) but returns (seq, batch, d_model)."""

    @checked
    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        return x.transpose(0, 1)


class SwappedUnchecked(nn.Module):
    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        return x.transpose(0, 1)


def subsequent_mask(size: int) -> Tensor:
    """The Annotated Transformer's causal mask, built in numpy: True where a position may attend."""
    mask = np.triu(np.ones((1, size, size)), k=1).astype("uint8")
    return torch.from_numpy(mask) == 0


class NumpyMaskAttention(nn.Module):
    """Causal attention whose mask goes through numpy, which turns the sequence length into a Python int."""

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        scores = (x @ x.transpose(1, 2)).masked_fill(~subsequent_mask(x.size(1)), -1e9)  # (batch, seq, seq)
        return scores.softmax(-1) @ x  # (batch, seq, d_model)


class SqueezeSingleBatch(nn.Module):
    """Drops the batch axis when it is 1: export traces batch >= 2 and never sees this branch."""

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        return x.squeeze(0) if x.size(0) == 1 else x


@checked
def _heads_first(x: Float[Tensor, "batch seq d"]) -> Float[Tensor, "seq batch d"]:
    return x  # wrong: the annotation promises a transpose


class NestedWrongAnnotation(nn.Module):
    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        return _heads_first(x)


class LearnedPositions(nn.Module):
    """Positions sliced from a 32-long table, as transformers' BertEmbeddings does."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("ids", torch.arange(32)[None])
        self.table = nn.Embedding(32, D)

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        return x + self.table(self.ids[:, : x.size(1)])  # (batch, seq, d_model) + (1, seq, d_model)


class Concat(nn.Module):
    def forward(
        self, query: Float[Tensor, "batch seq_q d_model"], key: Float[Tensor, "batch seq_k d_model"]
    ) -> Float[Tensor, "batch seq_q+seq_k d_model"]:
        return torch.cat([query, key], dim=1)  # (batch, seq_q + seq_k, d_model)


class FixedLength(nn.Module):
    """Adds a (6, d_model) weight: only seq == 6 works, and the example has seq == 7."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(6, D))

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        return x + self.weight


def _prove(module: nn.Module, **options):
    return prove(module, sizes={"d_model": D}, **options)


@pytest.mark.parametrize("module", [Swapped(), SwappedUnchecked()], ids=["checked", "annotated"])
def test_swapped_return_is_reported_with_both_shapes(module):
    result = _prove(module, samples=0)
    assert result.output_shape == ["seq", "batch", D]
    [problem] = result.problems
    assert problem.kind == "annotation"
    assert "(seq, batch, 4)" in problem.message and "(batch, seq, 4)" in problem.message
    assert '"batch seq d_model"' in problem.message


def test_silent_specialisation_is_caught_by_sampling_not_by_export():
    unchecked = _prove(NumpyMaskAttention(), samples=0)
    assert unchecked.ok  # export itself succeeds and says nothing
    result = _prove(NumpyMaskAttention())
    assert "seq == 7" in result.constraints
    assert result.problems and all(p.kind == "sample" for p in result.problems)
    assert "export specialised seq to 7" in result.problems[0].message
    program = torch.export.export(NumpyMaskAttention(), (torch.randn(3, 7, D),), strict=False,
                                  dynamic_shapes=({0: torch.export.Dim.AUTO, 1: torch.export.Dim.AUTO},))
    with pytest.raises(Exception):
        program.module()(torch.randn(3, 5, D))  # the specialisation is real: seq=5 is refused


def test_size_one_branch_missed_by_export_is_caught_at_batch_one():
    result = _prove(SqueezeSingleBatch())
    [problem] = result.problems
    assert problem.kind == "sample" and "batch=1" in problem.message
    assert "(1, 1, 4) from the exported program but (1, 4) from forward" in problem.message


def test_nested_checked_function_fails_on_symbolic_shapes():
    [problem] = _prove(NestedWrongAnnotation(), samples=0).problems
    assert problem.kind == "annotation"
    assert problem.message.startswith("@checked while tracing with symbolic sizes: _heads_first")
    assert not SYMBOL.search(problem.message)


def test_learned_positions_bound_the_sequence():
    result = _prove(LearnedPositions(), caps={"seq": 100})
    assert "seq <= 32" in result.constraints
    kinds = {s.kind: s.sizes["seq"] for s in result.samples}
    assert kinds["top"] == 32 and kinds["past"] == 33 and result.ok and result.checked


def test_concatenation_gives_a_sum_of_symbols_that_holds_at_other_sizes():
    result = _prove(Concat(), samples=0)
    assert result.output_shape == ["batch", "seq_k + seq_q", D]
    out = Concat()(torch.randn(2, 3, D), torch.randn(2, 11, D))
    assert out.shape == (2, 14, D)


def test_export_failure_is_one_readable_problem():
    result = _prove(FixedLength())
    [problem] = result.problems
    assert problem.kind == "export"
    assert problem.message.startswith("torch.export could not trace FixedLength.forward at batch=3, seq=7: ")
    assert "(seq)" in problem.message and "\n" not in problem.message
    assert not SYMBOL.search(problem.message)


class PairsOfPositions(nn.Module):
    """Folds the sequence in pairs: odd lengths cannot be traced, and fail at run time."""

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq/2 d_model"]:
        batch, seq, d_model = x.shape
        return x.view(batch, seq // 2, 2, d_model).sum(2)  # (batch, seq // 2, d_model)


def test_code_needing_even_lengths_is_exported_at_even_sizes_and_odd_ones_fail():
    result = _prove(PairsOfPositions())
    assert result.output_shape == ["batch", "(seq//2)", D]
    assert PairsOfPositions()(torch.randn(2, 10, D)).shape == (2, 5, D)
    assert result.samples[0].sizes == {"batch": 1, "seq": 1}
    assert "forward fails inside the advertised range" in result.problems[0].message


class BranchOnValues(nn.Module):
    """Branches on a tensor's values: export cannot trace it, and torch dumps the partial graph to stderr."""

    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        if x.sum() > 0:
            return x * 2
        return x


def test_data_dependent_branch_is_one_plain_line_naming_the_users_code_and_nothing_is_dumped(capfd):
    result = _prove(BranchOnValues())
    [problem] = result.problems
    assert problem.kind == "export" and "\n" not in problem.message
    assert "branches on tensor values" in problem.message
    assert "test_problems.py:" in problem.message and "if x.sum() > 0:" in problem.message
    assert not SYMBOL.search(problem.message) and "Eq(" not in problem.message  # no raw guard
    captured = capfd.readouterr()
    assert "def forward" not in captured.err + captured.out  # torch's partial graph print is kept off the terminal
    assert "Unable to find user code" not in captured.err
