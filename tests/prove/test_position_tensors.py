"""Length bounds from position tensors that are not embedding tables: an ALiBi bias built in forward for a
fixed number of positions (MPT's ``build_mpt_alibi_tensor(h, max_seq_len)``), found by what forward builds."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor, nn

from shapecheck.prove import prove
from shapecheck.prove.bounds import traced

D, H, N = 16, 4, 24


class BuiltAlibi(nn.Module):
    """Self-attention whose ALiBi bias is built for N positions in forward and sliced to the length (MPT's style):
    the bias cannot broadcast against the scores past N tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv, self.out = nn.Linear(D, 3 * D), nn.Linear(D, D)

    def forward(self, x: Tensor) -> Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, H, D // H).permute(2, 0, 3, 1, 4)  # (b, h, t, d_head) each
        slopes = 2.0 ** (-8.0 * torch.arange(1, H + 1) / H)  # (h,)
        alibi = slopes[:, None, None] * torch.arange(1 - N, 1)[None, None, :]  # (h, 1, N)
        alibi = alibi[:, :, max(0, N - t):]  # (h, 1, min(N, t))
        scores = q @ k.transpose(-2, -1) / (D // H) ** 0.5 + alibi  # (b, h, t, t)
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, D))  # (b, t, D)


def test_a_position_tensor_built_in_forward_is_a_candidate_and_the_lengths_are_not():
    model = BuiltAlibi()
    found = [c.size for c in traced(lambda n: model(torch.zeros(1, n, D)))]
    assert N in found and 2 not in found and 3 not in found  # the arange of the length changes with it


def test_the_alibi_length_is_the_bound_and_sampling_goes_past_it():
    result = prove(BuiltAlibi().eval(), sizes={"d_model": D})
    assert "seq <= 24" in result.constraints
    kinds = {s.kind: s.sizes["seq"] for s in result.samples}
    assert kinds["top"] == N and kinds["past"] == N + 1
    BuiltAlibi()(torch.zeros(1, N, D))  # the peer: forward runs at N ...
    with pytest.raises(RuntimeError):  # ... and fails one past it
        BuiltAlibi()(torch.zeros(1, N + 1, D))


def test_transformers_mpt_is_bounded_by_its_max_seq_len():
    transformers = pytest.importorskip("transformers")
    config = transformers.MptConfig(d_model=32, n_heads=4, n_layers=2, vocab_size=64, max_seq_len=40)
    torch.manual_seed(0)
    model = transformers.MptModel(config).eval()
    result = prove(model)
    assert "seq <= 40" in result.constraints and result.ok and result.checked
    kinds = {s.kind: s.sizes["seq"] for s in result.samples}
    assert kinds["top"] == 40 and kinds["past"] == 41
    with pytest.raises(Exception):  # noqa: B017 - the peer: MptModel itself fails at 41 tokens
        model(torch.zeros(1, 41, dtype=torch.long))
