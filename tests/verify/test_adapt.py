"""Calling conventions and the float64 reference, checked against the real modules they imitate."""

import os

import pytest
import torch
from torch import nn

from reference_models.attention import MultiHeadAttention
from reference_models.gpt2 import CausalSelfAttention, GPT2Config
from shapecheck.target import load_target
from shapecheck.testing.adapt import call, mask_tensor, read_outcome
from shapecheck.testing.probe import discover
from shapecheck.testing.weights import find_projections, reference_attention, unexplained_parameters

SEEDS = os.path.join(os.path.dirname(__file__), "..", "corpus", "seeds")


def _inputs(batch=2, seq_q=3, seq_k=4, d_model=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(batch, n, d_model, generator=gen) for n in (seq_q, seq_k, seq_k))


def _torch_mha(batch_first: bool) -> nn.MultiheadAttention:
    torch.manual_seed(0)
    return nn.MultiheadAttention(6, 3, batch_first=batch_first).eval()


def test_torch_mha_discovery_reads_layout_mask_and_weights():
    conv = discover(_torch_mha(False), 6)
    assert (conv.batch_first, conv.mask_name, conv.mask_kind, conv.mask_shape) == (False, "key_padding_mask", "ignore", "bs")
    assert conv.cross and conv.returns_weights and conv.causal_name is None  # is_causal is only a hint there


def test_seq_first_call_matches_the_batch_first_module():
    seq_first, batch_first = _torch_mha(False), _torch_mha(True)
    batch_first.load_state_dict(seq_first.state_dict())
    q, k, v = _inputs()
    keep = torch.tensor([[True, True, False, True], [True, False, False, True]])
    a = call(seq_first, discover(seq_first, 6), q, k, v, keep=keep, weights=True)
    b = call(batch_first, discover(batch_first, 6), q, k, v, keep=keep, weights=True)
    expected, weights = batch_first(q, k, v, key_padding_mask=~keep, average_attn_weights=False)
    torch.testing.assert_close(a.output, expected)
    torch.testing.assert_close(b.output, expected)
    torch.testing.assert_close(a.weights, weights)


def test_reference_from_packed_weights_matches_torch():
    module = _torch_mha(True)
    q, k, v = _inputs()
    keep = torch.tensor([[True, False, True, True], [False, True, True, True]])
    proj = find_projections(module)
    assert proj.pattern == "in_proj_weight + out_proj" and not unexplained_parameters(module, proj)
    expected, _ = module(q, k, v, key_padding_mask=~keep)
    torch.testing.assert_close(reference_attention(proj, 3, q, k, v, keep).float(), expected, atol=1e-5, rtol=1e-4)


def test_reference_from_separate_projections_matches_our_module_with_causal():
    torch.manual_seed(0)
    module = MultiHeadAttention(6, 2).eval()
    q, _, _ = _inputs(seq_k=3)
    proj = find_projections(module)
    expected = module(q, causal=True)
    torch.testing.assert_close(reference_attention(proj, 2, q, q, q, causal=True).float(), expected, atol=1e-5, rtol=1e-4)


def test_reference_from_fused_c_attn_matches_gpt2_attention():
    torch.manual_seed(0)
    module = CausalSelfAttention(GPT2Config(vocab=11, max_seq=8, d_model=6, layers=1, heads=2, d_ff=12, dropout=0.0)).eval()
    x, _, _ = _inputs(seq_k=3)
    proj = find_projections(module)
    assert proj.pattern == "c_attn + c_proj"
    torch.testing.assert_close(reference_attention(proj, 2, x, x, x, causal=True).float(), module(x), atol=1e-5, rtol=1e-4)


def test_hf_bert_self_attention_additive_mask_and_tuple_output():
    transformers = pytest.importorskip("transformers")
    from transformers.models.bert.modeling_bert import BertSelfAttention

    config = transformers.BertConfig(hidden_size=6, num_attention_heads=2, attention_probs_dropout_prob=0.0)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    module = BertSelfAttention(config).eval()
    conv = discover(module, 6)
    assert (conv.cross, conv.mask_name, conv.mask_kind, conv.returns_weights) == (False, "attention_mask", "additive", True)
    x, _, _ = _inputs(seq_k=3)
    keep = torch.tensor([[True, True, False], [True, True, True]])
    out = call(module, conv, x, keep=keep, weights=True)
    proj = find_projections(module)
    assert proj.wo is None  # the output dense lives in BertSelfOutput
    torch.testing.assert_close(out.output, reference_attention(proj, 2, x, x, x, keep).float(), atol=1e-5, rtol=1e-4)
    assert float(out.weights[0, :, :, 2].detach().abs().max()) < 1e-6  # the masked key gets no weight


def test_mask_conventions():
    keep = torch.tensor([[True, False]])
    assert torch.equal(mask_tensor(keep, "keep", "bs", 3, torch.float32), keep)
    assert torch.equal(mask_tensor(keep, "ignore", "bs", 3, torch.float32), ~keep)
    additive = mask_tensor(keep, "additive", "b1ts", 3, torch.float16)
    assert additive.shape == (1, 1, 3, 2) and additive.dtype == torch.float16
    assert additive[0, 0, 0, 0] == 0 and additive[0, 0, 0, 1] == torch.finfo(torch.float16).min


def test_read_outcome_tensor_tuple_dict_and_model_output():
    out, weights = torch.zeros(2, 3, 4), torch.ones(2, 1, 3, 5)
    assert read_outcome(out, True, 3, 5).weights is None
    assert read_outcome((out, None, weights), True, 3, 5).weights is weights
    assert read_outcome({"attn_weights": weights, "output": out}, True, 3, 5).output is out
    assert read_outcome((out.transpose(0, 1), weights), False, 3, 5).output.shape == (2, 3, 4)
    transformers = pytest.importorskip("transformers")
    model_output = transformers.modeling_outputs.BaseModelOutput(last_hidden_state=out, attentions=(weights,))
    read = read_outcome(model_output, True, 3, 5)
    assert read.output is out and read.weights is weights


def test_seed001_linear_layers_pattern():
    target = load_target(os.path.join(SEEDS, "seed001_attention_constructible.py") + ":MultiHeadedAttention")
    torch.manual_seed(0)
    module = target.obj(2, 6, dropout=0.0).eval()
    q, k, v = _inputs()
    keep = torch.tensor([[True, False, True, True], [True, True, True, False]])
    proj = find_projections(module)
    assert proj.pattern == "linear_layers[0..2] + output_layer"
    expected = module(q, k, v, mask=keep[:, None, None, :])
    torch.testing.assert_close(reference_attention(proj, 2, q, k, v, keep).float(), expected, atol=1e-5, rtol=1e-4)


class _NamedProjections(nn.Module):
    """Multi-head softmax(QKᵀ/√d_k)V whose four projections sit under a naming family's names."""

    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__()
        self.heads = heads

    def projections(self) -> tuple[nn.Module, nn.Module, nn.Module, nn.Module]:
        raise NotImplementedError

    def forward(self, query, key, value, keep=None, causal=False):
        wq, wk, wv, wo = self.projections()
        split = lambda x: x.view(x.size(0), x.size(1), self.heads, -1).transpose(1, 2)  # noqa: E731
        q, k, v = split(wq(query)), split(wk(key)), split(wv(value))
        allowed = None if keep is None else keep[:, None, None, :]
        out = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed, is_causal=causal)
        return wo(out.transpose(1, 2).reshape(query.shape))


class _QKVO(_NamedProjections):  # T5's names, with the usual √d_k scale
    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__(d_model, heads)
        self.q, self.k, self.v, self.o = (nn.Linear(d_model, d_model, bias=False) for _ in range(4))

    def projections(self):
        return self.q, self.k, self.v, self.o


class _AnnotatedLinears(_NamedProjections):  # the Annotated Transformer's clones(nn.Linear(d, d), 4)
    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__(d_model, heads)
        self.linears = nn.ModuleList(nn.Linear(d_model, d_model) for _ in range(4))

    def projections(self):
        return tuple(self.linears)


class _ToOutList(_NamedProjections):  # diffusers keeps to_out as ModuleList([Linear, Dropout])
    def __init__(self, d_model: int, heads: int) -> None:
        super().__init__(d_model, heads)
        self.to_q, self.to_k, self.to_v = (nn.Linear(d_model, d_model) for _ in range(3))
        self.to_out = nn.ModuleList([nn.Linear(d_model, d_model), nn.Dropout(0.0)])

    def projections(self):
        return self.to_q, self.to_k, self.to_v, self.to_out[0]


@pytest.mark.parametrize("cls, pattern", [
    (_QKVO, "q/k/v + o"),
    (_AnnotatedLinears, "linears[0..3]"),
    (_ToOutList, "to_q/to_k/to_v + to_out"),
], ids=lambda x: getattr(x, "__name__", x))
def test_reference_from_the_shared_naming_table_matches_the_module(cls, pattern):
    torch.manual_seed(0)
    module = cls(6, 2).eval()
    q, k, v = _inputs()
    keep = torch.tensor([[True, False, True, True], [True, True, True, False]])
    proj = find_projections(module)
    assert proj.pattern == pattern and not unexplained_parameters(module, proj)
    torch.testing.assert_close(reference_attention(proj, 2, q, k, v, keep).float(), module(q, k, v, keep), atol=1e-5, rtol=1e-4)
    x = q[:, :3]
    torch.testing.assert_close(reference_attention(proj, 2, x, x, x, causal=True).float(), module(x, x, x, causal=True), atol=1e-5, rtol=1e-4)


def test_reference_from_torch_separate_packed_weights_with_kdim_vdim():
    torch.manual_seed(0)
    module = nn.MultiheadAttention(6, 3, kdim=4, vdim=5, batch_first=True).eval()
    gen = torch.Generator().manual_seed(1)
    q, k, v = torch.randn(2, 3, 6, generator=gen), torch.randn(2, 4, 4, generator=gen), torch.randn(2, 4, 5, generator=gen)
    keep = torch.tensor([[True, False, True, True], [False, True, True, True]])
    proj = find_projections(module)
    assert proj.pattern == "q/k/v_proj_weight + out_proj" and not unexplained_parameters(module, proj)
    expected, _ = module(q, k, v, key_padding_mask=~keep)
    torch.testing.assert_close(reference_attention(proj, 3, q, k, v, keep).float(), expected, atol=1e-5, rtol=1e-4)


def test_no_reference_through_an_output_followed_by_a_shortcut():
    from reference_models.packed import PackedAttentionConfig, PackedMultiheadAttention

    assert find_projections(PackedMultiheadAttention(PackedAttentionConfig(6, 2))) is None  # fuse_heads, then + identity


def test_no_reference_from_interleaved_query_key_value():
    module = nn.Module()
    module.query_key_value, module.dense = nn.Linear(6, 18), nn.Linear(6, 6)  # GPT-NeoX: rows per head as [q_h; k_h; v_h]
    assert find_projections(module) is None


def test_bare_weight_parameters_are_only_read_under_torch_packed_names():
    module = nn.Module()
    module.wq, module.wk, module.wv = (nn.Parameter(torch.zeros(6, 6)) for _ in range(3))  # used as x @ w, or w @ x?
    module.wo = nn.Linear(6, 6)
    assert find_projections(module) is None
