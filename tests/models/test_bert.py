"""BERT against transformers' BertModel (copied weights), seed 000's block, released sizes, errors."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from reference_models.bert import (
    BertAttention,
    BertConfig,
    BertLM,
    BertModel,
    NextSentencePrediction,
    SelfAttentionConfig,
    SinusoidalPositions,
)
from shapecheck import ConfigError, ShapeError

TOL = 1e-5
SEED000 = Path(__file__).resolve().parents[1] / "corpus" / "seeds" / "seed000_self_attention.py"
TINY = BertConfig(vocab=64, d_model=16, layers=2, heads=4, d_ff=32, max_seq=24)


def _hf_config(transformers, hidden_act="gelu", **sizes):
    sizes = dict(
        vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=32, max_position_embeddings=24, hidden_act=hidden_act,
    ) | sizes  # fmt: skip
    return transformers.BertConfig(**sizes)


def _count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _batch():
    torch.manual_seed(1)
    ids, segments = torch.randint(64, (3, 9)), torch.randint(2, (3, 9))
    keep = torch.ones(3, 9, dtype=torch.long)
    keep[1, 6:] = 0  # padding at the end of two rows
    keep[2, 2:] = 0
    return ids, segments, keep


@pytest.mark.parametrize(("hidden_act", "ours_act"), [("gelu", "gelu"), ("gelu_new", "gelu_tanh"), ("relu", "relu")])
def test_matches_transformers_bert_model(hidden_act, ours_act):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    hf = transformers.BertModel(_hf_config(transformers, hidden_act)).eval()
    with torch.no_grad():  # weights far from the 0.02-std init, so every path matters
        for p in hf.parameters():
            p.normal_(0.0, 0.3)
    config = BertConfig.from_hf(hf.config)
    assert config == BertConfig(vocab=64, d_model=16, layers=2, heads=4, d_ff=32, max_seq=24, activation=ours_act)
    ours = BertModel(config).eval()
    result = ours.load_state_dict(hf.state_dict(), strict=True)
    assert not result.missing_keys and not result.unexpected_keys
    ids, segments, keep = _batch()
    for mask in (None, keep):
        expected = hf(input_ids=ids, token_type_ids=segments, attention_mask=mask)
        got = ours(ids, segments, mask)
        assert (got.sequence_output - expected.last_hidden_state).abs().max() <= TOL
        assert (got.pooled_output - expected.pooler_output).abs().max() <= TOL
    unmasked = ours(ids, segments).sequence_output
    assert (ours(ids, segments, keep).sequence_output - unmasked).abs().max() > 1e-3  # the mask changes things


def test_padding_tokens_do_not_reach_real_tokens():
    model = BertModel(TINY).eval()
    ids, segments, keep = _batch()
    other = ids.clone()
    other[keep == 0] = (ids[keep == 0] + 7) % 64  # change only the padded ids
    a = model(ids, segments, keep.bool()).sequence_output
    b = model(other, segments, keep.bool()).sequence_output
    real = keep.bool()
    assert (a[real] - b[real]).abs().max() <= TOL
    assert (a[~real] - b[~real]).abs().max() > 1e-3


@pytest.mark.parametrize(
    ("ours", "hf_sizes"),
    [
        (BertConfig.base, {}),
        (
            BertConfig.large,
            dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
        ),
    ],
)
def test_released_parameter_counts_match_transformers(ours, hf_sizes):
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        mine = BertModel(ours())
        theirs = transformers.BertModel(transformers.BertConfig(**hf_sizes))
    assert _count(mine) == _count(theirs)
    assert sorted(mine.state_dict()) == sorted(theirs.state_dict())


def test_without_pooler_matches_transformers_keys():
    transformers = pytest.importorskip("transformers")
    ours = BertModel(TINY, add_pooling_layer=False)
    theirs = transformers.BertModel(_hf_config(transformers), add_pooling_layer=False)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    ids, segments, _ = _batch()
    assert ours(ids, segments).pooled_output is None


def test_released_sizes():
    base, large = BertConfig.base(), BertConfig.large()
    assert (base.layers, base.d_model, base.heads, base.d_ff, base.d_head) == (12, 768, 12, 3072, 64)
    assert (large.layers, large.d_model, large.heads, large.d_ff, large.d_head) == (24, 1024, 16, 4096, 64)
    assert (base.vocab, base.max_seq, base.segments) == (30522, 512, 2)


def _seed000_module():
    spec = importlib.util.spec_from_file_location("seed000_self_attention", SEED000)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.attention_probs_dropout_prob = 0.1  # the name the seed uses without defining it
    return module


def test_bert_attention_equals_seed000_self_attention():
    seed = _seed000_module()
    torch.manual_seed(0)
    theirs = seed.SelfAttention(4, 16, 16, 0.1).eval()
    ours = BertAttention(SelfAttentionConfig(4, 16, 16, 0.1)).eval()
    state = {("self." if k.split(".")[0] in ("query", "key", "value") else "output.") + k: v
             for k, v in theirs.state_dict().items()}  # fmt: skip
    ours.load_state_dict(state, strict=True)
    x = torch.randn(2, 7, 16)
    assert (ours(x) - theirs(x)).abs().max() <= TOL


def test_seed000_width_mismatch_fails_late_ours_at_construction():
    seed = _seed000_module()
    theirs = seed.SelfAttention(8, 256, 512, 0.1)  # constructs without complaint
    with pytest.raises(RuntimeError):  # and fails only when called, in the residual add
        theirs(torch.randn(1, 3, 256))
    with pytest.raises(ConfigError) as info:
        SelfAttentionConfig(8, 256, 512, 0.1)
    assert str(info.value) == (
        "SelfAttentionConfig: d_in=256 must equal d_model=512: the residual adds the input to the output"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(d_model=510, heads=8), "BertConfig: d_model=510 is not divisible by heads=8"),
        (dict(layers=0), "BertConfig: layers=0 must be positive"),
        (dict(attn_dropout=1.0), "BertConfig: attn_dropout=1.0 must be in [0, 1)"),
        (dict(eps=0.0), "BertConfig: eps=0.0 must be a positive number"),
        (dict(positions="rotary"), "BertConfig: positions='rotary' is not one of 'learned', 'sinusoidal'"),
        (dict(activation="silu"), "BertConfig: activation='silu' is not one of 'gelu', 'gelu_tanh', 'relu'"),
    ],
)
def test_config_errors(kwargs, message):
    with pytest.raises(ConfigError) as info:
        BertConfig(**kwargs)
    assert str(info.value) == message


def test_from_hf_rejects_what_it_cannot_represent():
    transformers = pytest.importorskip("transformers")
    with pytest.raises(ConfigError, match=r"^BertConfig.from_hf: hidden_act='silu' is not one of 'gelu'"):
        BertConfig.from_hf(_hf_config(transformers, "silu"))


def test_wrong_width_into_bert_attention_message_is_pinned():
    block = BertAttention(SelfAttentionConfig(4, 16, 16, 0.0))
    with pytest.raises(ShapeError) as info:
        block(torch.randn(2, 5, 8))
    assert str(info.value).splitlines()[:2] == [
        "BertAttention.forward: hidden_states.shape[2] is 8, but d_model=16 (bound by the config)",
        '  hidden_states: expected "batch seq d_model", got (2, 5, 8)',
    ]


def test_wrong_input_into_bert_model_messages_are_pinned():
    model = BertModel(TINY)
    with pytest.raises(ShapeError) as info:
        model(torch.zeros(2, 5))
    assert str(info.value).splitlines()[0] == (
        "BertModel.forward: input_ids has dtype torch.float32, but the annotation Int[...] does not allow it"
    )
    with pytest.raises(ShapeError) as info:
        model(torch.zeros(2, 5, dtype=torch.long), attention_mask=torch.ones(2, 6))
    assert str(info.value).splitlines()[0] == (
        "BertModel.forward: attention_mask.shape[1] is 6, but seq=5 (bound by input_ids.shape[1])"
    )
    with pytest.raises(ShapeError) as info:
        model(torch.zeros(1, 25, dtype=torch.long))
    assert str(info.value) == (
        "BertEmbeddings.forward: input_ids.shape[1] is 25, but max_seq=24 (bound by the config): "
        "there are no more positions"
    )


def test_sinusoidal_positions_match_transformers():
    pytest.importorskip("transformers")
    from transformers.models.distilbert.modeling_distilbert import create_sinusoidal_embeddings

    expected = torch.empty(24, 16)
    create_sinusoidal_embeddings(24, 16, expected)
    got = SinusoidalPositions(24, 16)(torch.arange(24))
    assert (got - expected).abs().max() <= TOL


def test_sinusoidal_bert_has_no_position_parameters():
    learned = BertModel(TINY)
    fixed = BertModel(dataclasses.replace(TINY, positions="sinusoidal"))
    assert "embeddings.position_embeddings.weight" not in fixed.state_dict()
    assert _count(learned) - _count(fixed) == TINY.max_seq * TINY.d_model
    ids, segments, keep = _batch()
    assert fixed(ids, segments, keep).sequence_output.shape == (3, 9, 16)


def test_bert_lm_heads():
    model = BertLM(TINY).eval()
    ids, segments, keep = _batch()
    nsp, mlm = model(ids, segments, keep)
    assert nsp.shape == (3, 2) and mlm.shape == (3, 9, 64)
    assert (nsp.exp().sum(-1) - 1).abs().max() <= TOL  # log-probabilities
    assert (mlm.exp().sum(-1) - 1).abs().max() <= TOL
    hidden = model.bert(ids, segments, keep).sequence_output
    assert (nsp - F.log_softmax(model.next_sentence.linear(hidden[:, 0]), -1)).abs().max() <= TOL
    assert (mlm - F.log_softmax(model.mask_lm.linear(hidden), -1)).abs().max() <= TOL
    assert model.bert.pooler is None  # NSP reads the first token (seed 001): a pooler would be dead weight
    assert not [k for k in model.state_dict() if "pooler" in k]


def test_next_sentence_prediction_reads_only_the_first_token():
    head = NextSentencePrediction(TINY)
    hidden = torch.randn(2, 5, 16)
    changed = hidden.clone()
    changed[:, 1:] += 1.0
    assert torch.equal(head(hidden), head(changed))
    changed[:, 0] += 1.0
    assert not torch.allclose(head(hidden), head(changed))


def test_dropout_only_in_training():
    model = BertModel(TINY)
    ids, segments, _ = _batch()
    model.eval()
    assert torch.equal(model(ids, segments).sequence_output, model(ids, segments).sequence_output)
    model.train()
    assert not torch.allclose(model(ids, segments).sequence_output, model(ids, segments).sequence_output)
