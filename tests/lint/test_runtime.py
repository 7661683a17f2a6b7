"""PyTorch confirms what lint says without running anything: the flagged code misbehaves, the clean twin does not.

The corpus modules are imported here, by the tests; lint itself only reads them.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch

from .helpers import CORPUS, SEEDS


def _load(path):
    spec = importlib.util.spec_from_file_location(f"corpus_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _mixes_batch(module, x, dim):
    """True when changing batch item 1 of ``x`` changes output item 0."""
    other = x.clone()
    other.select(dim, 1).normal_()
    out, out2 = module(x), module(other)
    out, out2 = (out[0], out2[0]) if isinstance(out, tuple) else (out, out2)
    return not torch.allclose(out.select(dim, 0), out2.select(dim, 0), atol=1e-6)


@torch.no_grad()
def test_sc106_view_after_transpose_raises_and_the_contiguous_twin_runs():
    torch.manual_seed(0)
    buggy = _load(CORPUS / "buggy" / "sc106_view_not_contiguous.py").Attention(8, 2).eval()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        buggy(torch.randn(2, 3, 8))
    clean = _load(CORPUS / "clean" / "nanogpt_attention.py").CausalSelfAttention(8, 2, block_size=4).eval()
    assert clean(torch.randn(2, 3, 8)).shape == (2, 3, 8)


@torch.no_grad()
def test_sc112_seed002_mixes_batch_items_and_the_fixed_merge_does_not():
    torch.manual_seed(0)
    seed = _load(SEEDS / "seed002_multihead.py").MultiheadAttention(8, 2).eval()
    x = torch.randn(3, 2, 8)  # [tgt_len, batch, embed_dim]
    assert _mixes_batch(lambda q: seed(q, q, q), x, dim=1)
    fixed = _load(CORPUS / "clean" / "seq_first_attention.py").MultiheadAttention(8, 2).eval()
    assert not _mixes_batch(lambda q: fixed(q, q, q), x, dim=1)


@torch.no_grad()
def test_sc104_merge_without_transpose_differs_from_the_fused_kernel():
    torch.manual_seed(0)
    clean = _load(CORPUS / "clean" / "nanogpt_attention.py").CausalSelfAttention(8, 2, block_size=4).eval()
    buggy = _load(CORPUS / "buggy" / "sc104_merge_without_transpose.py").CausalSelfAttention(8, 2).eval()
    buggy.load_state_dict({k: v for k, v in clean.state_dict().items() if k != "bias"})
    x = torch.randn(2, 4, 8)
    clean.bias.fill_(1.0)  # no causal mask, as in the buggy module
    reference = torch.nn.functional.scaled_dot_product_attention
    q, k, v = clean.c_attn(x).split(8, dim=2)
    q, k, v = (t.view(2, 4, 2, 4).transpose(1, 2) for t in (q, k, v))
    expected = clean.c_proj(reference(q, k, v).transpose(1, 2).reshape(2, 4, 8))
    assert torch.allclose(clean(x), expected, atol=1e-5)
    assert not torch.allclose(buggy(x), expected, atol=1e-3)


@torch.no_grad()
def test_sc101_softmax_over_heads_does_not_normalise_over_keys():
    torch.manual_seed(0)
    module = _load(CORPUS / "buggy" / "sc101_softmax_axis.py").ClassicAttention(4)
    q = k = torch.randn(1, 2, 3, 4)
    scores = torch.matmul(q, k.transpose(-2, -1)) / 2.0
    probs = module.softmax(scores)
    assert not torch.allclose(probs.sum(-1), torch.ones(1, 2, 3))
