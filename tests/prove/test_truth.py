"""prove never says "shapes check out" over a crash: bounds confirmed at N and N + 1, samples at the ends of ranges.

Peers: each module run directly at the sizes in question.
"""

from __future__ import annotations

import textwrap

import pytest
import torch
from torch import Tensor, nn
from typer.testing import CliRunner

from shapecheck.cli import app
from shapecheck.prove import prove

D, BLOCK = 16, 256


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention: a causal-mask buffer of block_size rows, sliced by the length."""

    def __init__(self) -> None:
        super().__init__()
        self.c_attn, self.c_proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

    def forward(self, x: Tensor) -> Tensor:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(D, dim=2)  # (b, t, D) each
        att = (q @ k.transpose(-2, -1)) / D**0.5  # (b, t, t)
        att = att.masked_fill(self.bias[0, :, :t, :t] == 0, float("-inf")).softmax(-1)
        return self.c_proj(att @ v)  # (b, t, D)


class NanoGPT(nn.Module):
    """wte, a 256-row wpe indexed by ``arange(t)``, one block: crashes at 257 tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(50, D), nn.Embedding(BLOCK, D)
        self.attn = CausalSelfAttention()

    def forward(self, idx: Tensor) -> Tensor:
        pos = torch.arange(0, idx.size(1), dtype=torch.long)  # (t,)
        return self.attn(self.wte(idx) + self.wpe(pos))  # (b, t, D)


class ShortTable(nn.Module):
    """A 30-row table read by position, under a name no bound search looks for: runs to 30, fails at 31 and 32."""

    def __init__(self) -> None:
        super().__init__()
        self.pe = nn.Parameter(torch.randn(30, D))

    def forward(self, x: Tensor) -> Tensor:
        return x + self.pe[torch.arange(x.size(1))]  # (batch, seq, D)


def test_nanogpt_position_table_of_256_is_the_bound_and_real():
    model = NanoGPT().eval()
    result = prove(model)  # idx: token ids, as nanoGPT names them
    assert "seq <= 256" in result.constraints and result.ok and result.checked
    model(torch.zeros(1, 256, dtype=torch.long))  # the peer: it runs at 256 ...
    with pytest.raises(Exception):  # noqa: B017 - ... and crashes at 257
        model(torch.zeros(1, 257, dtype=torch.long))
    kinds = {s.kind: s.sizes["seq"] for s in result.samples}
    assert kinds["top"] == 256 and kinds["past"] == 257 and kinds["low"] == 1


def test_a_failure_below_the_advertised_top_is_caught_by_the_end_of_range_sample():
    from jaxtyping import Float

    class Annotated(ShortTable):
        def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
            return super().forward(x)

    result = prove(Annotated(), sizes={"d_model": D})  # advertised: seq up to the cap of 32
    assert not result.ok and result.verdict != "shapes check out"
    assert any(s.kind == "top" and s.sizes["seq"] == 32 and s.problem for s in result.samples)
    with pytest.raises(IndexError):
        Annotated()(torch.randn(1, 32, D))


def test_without_runs_the_verdict_names_what_was_not_checked():
    result = prove(NanoGPT(), samples=0)
    assert result.ok and not result.checked and result.verdict.startswith("shapes proved symbolically; not checked")


UNSHAPED = '''
import torch
from torch import nn


class Frames(nn.Module):
    def __init__(self, d_model=8, heads=2):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, frames):
        return self.proj(frames)
'''


def test_an_argument_that_cannot_be_shaped_is_one_line_naming_it_and_the_flag(tmp_path):
    path = tmp_path / "frames.py"
    path.write_text(textwrap.dedent(UNSHAPED))
    result = CliRunner().invoke(app, ["prove", f"{path}:Frames"])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "'frames'" in line and "--inputs" in line and "Traceback" not in result.output


def test_table_fits_80_columns():
    result = CliRunner().invoke(app, ["prove", "reference_models.attention:MultiHeadAttention", "--cross", "--d-model", "16",
                                      "--heads", "2"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert result.stdout.rstrip().splitlines()[-1].startswith("shapes check out")


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv", "json"])
def test_every_format_renders_the_shapes_and_verdict(fmt):
    import json

    result = CliRunner().invoke(app, ["prove", "reference_models.attention:MultiHeadAttention", "--d-model", "16", "--heads", "2",
                                      "--format", fmt])
    assert result.exit_code == 0, result.output
    assert "batch" in result.stdout and "shapes check out" in result.stdout
    if fmt == "json":
        data = json.loads(result.stdout)
        assert (data["ok"], data["exit_code"], data["checked"]) == (True, 0, True)


class EvenLengths(nn.Module):
    """A 64-row position table, but code that rejects odd lengths: 64 is not where it stops running."""

    def __init__(self) -> None:
        super().__init__()
        self.wpe = nn.Embedding(64, D)

    def forward(self, x: Tensor) -> Tensor:
        if x.size(1) % 2:
            raise ValueError("odd length")
        return x + self.wpe(torch.arange(x.size(1)) % 64)  # (batch, seq, D)


def test_no_false_bound_from_a_failure_that_is_not_the_end():
    from jaxtyping import Float

    class Annotated(EvenLengths):
        def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
            return super().forward(x)

    model = Annotated()
    result = prove(model, sizes={"d_model": D})
    assert not any(c.startswith("seq <=") for c in result.constraints), result.constraints
    model(torch.randn(1, 66, D))  # the peer: it runs past the table's 64 rows at an even length
