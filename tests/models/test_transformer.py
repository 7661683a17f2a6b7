"""The Transformer encoder-decoder against torch's layers and the paper's Table 3."""

import math

import pytest
import torch
from torch import nn

from reference_models.transformer import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    Transformer,
    TransformerConfig,
    sinusoidal_positions,
    subsequent_mask,
)
from shapecheck.errors import ConfigError, ShapeError

TOL = 1e-5
D, HEADS, FF, EPS = 16, 4, 32, 1e-6


def _tiny(norm_first=False, **kwargs):
    sizes = dict(vocab=50, d_model=D, layers=2, heads=HEADS, d_ff=FF, dropout=0.0, max_seq=16, eps=EPS)
    return TransformerConfig(**{**sizes, **kwargs, "norm_first": norm_first})


def _count(module):
    return sum(p.numel() for p in module.parameters())


# ---------------------------------------------------------------- copying torch's weights into ours


def _copy_attention(ours, theirs):
    """nn.MultiheadAttention packs Q, K, V into in_proj_weight (3E, E): split it into our three."""
    weights, biases = theirs.in_proj_weight.chunk(3), theirs.in_proj_bias.chunk(3)
    for linear, w, b in zip((ours.q_proj, ours.k_proj, ours.v_proj), weights, biases):
        linear.weight.copy_(w)
        linear.bias.copy_(b)
    ours.out_proj.weight.copy_(theirs.out_proj.weight)
    ours.out_proj.bias.copy_(theirs.out_proj.bias)


def _copy_layer(ours, theirs):
    with torch.no_grad():
        _copy_attention(ours.self_attn, theirs.self_attn)
        if isinstance(ours, DecoderLayer):
            _copy_attention(ours.cross_attn, theirs.multihead_attn)
        for mine, its in ((ours.ffn.w_1, theirs.linear1), (ours.ffn.w_2, theirs.linear2)):
            mine.weight.copy_(its.weight)
            mine.bias.copy_(its.bias)
        for name in ("norm1", "norm2", "norm3"):
            if hasattr(theirs, name):
                _copy_norm(getattr(ours, name), getattr(theirs, name))


def _copy_norm(ours, theirs):
    with torch.no_grad():
        theirs.weight.normal_()  # away from ones/zeros, so a swapped norm shows
        theirs.bias.normal_()
        ours.weight.copy_(theirs.weight)
        ours.bias.copy_(theirs.bias)


def _torch_layer(cls, norm_first):
    # batch_first, relu, dropout 0 and the same eps: the conventions where the two agree
    return cls(D, HEADS, FF, dropout=0.0, activation="relu", layer_norm_eps=EPS, batch_first=True, norm_first=norm_first)


def _blocked(seq):
    """Seed 004's M as torch's boolean attn_mask (True = may not attend), the padding masks' type."""
    return subsequent_mask(seq) != 0


def _data(batch=3, seq_q=6, seq_k=7):
    g = torch.Generator().manual_seed(0)
    src, tgt = torch.randn(batch, seq_k, D, generator=g), torch.randn(batch, seq_q, D, generator=g)
    src_pad = torch.zeros(batch, seq_k, dtype=torch.bool)
    src_pad[0, 5:] = True  # item 0: last two source tokens are padding
    tgt_pad = torch.zeros(batch, seq_q, dtype=torch.bool)
    tgt_pad[1, 4:] = True  # item 1: last two target tokens are padding
    return src, tgt, src_pad, tgt_pad


# ---------------------------------------------------------------- layers vs torch


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_encoder_layer_matches_torch(norm_first):
    torch.manual_seed(0)
    ours, theirs = EncoderLayer(_tiny(norm_first)).eval(), _torch_layer(nn.TransformerEncoderLayer, norm_first).eval()
    _copy_layer(ours, theirs)
    src, _, src_pad, _ = _data()
    assert (ours(src, src_pad) - theirs(src, src_key_padding_mask=src_pad)).abs().max() <= TOL
    causal = torch.ones(7, 7, dtype=torch.bool).tril()  # True = may attend; torch's bool mask: True = blocked
    assert (ours(src, mask=causal[None, None]) - theirs(src, src_mask=~causal)).abs().max() <= TOL


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_decoder_layer_matches_torch_with_causal_and_padding_masks(norm_first):
    torch.manual_seed(0)
    ours, theirs = DecoderLayer(_tiny(norm_first)).eval(), _torch_layer(nn.TransformerDecoderLayer, norm_first).eval()
    _copy_layer(ours, theirs)
    src, tgt, src_pad, tgt_pad = _data(seq_q=6, seq_k=7)  # seq_q != seq_k: cross-attention is rectangular
    expected = theirs(
        tgt,
        src,
        tgt_mask=_blocked(6),
        tgt_key_padding_mask=tgt_pad,
        memory_key_padding_mask=src_pad,
    )
    assert (ours(tgt, src, tgt_pad, src_pad) - expected).abs().max() <= TOL


def test_stacks_match_torch_with_final_norms_when_norm_first():
    """nn.TransformerEncoder/Decoder with a final norm = our pre-norm stacks (ours adds it only then)."""
    torch.manual_seed(0)
    config = _tiny(norm_first=True)
    enc_layer = _torch_layer(nn.TransformerEncoderLayer, True)
    dec_layer = _torch_layer(nn.TransformerDecoderLayer, True)
    their_enc = nn.TransformerEncoder(enc_layer, 2, norm=nn.LayerNorm(D, EPS), enable_nested_tensor=False).eval()
    their_dec = nn.TransformerDecoder(dec_layer, 2, norm=nn.LayerNorm(D, EPS)).eval()
    our_enc, our_dec = Encoder(config).eval(), Decoder(config).eval()
    for ours, theirs in zip([*our_enc.layers, *our_dec.layers], [*their_enc.layers, *their_dec.layers]):
        _copy_layer(ours, theirs)
    _copy_norm(our_enc.norm, their_enc.norm)
    _copy_norm(our_dec.norm, their_dec.norm)
    src, tgt, src_pad, tgt_pad = _data()
    memory = their_enc(src, src_key_padding_mask=src_pad)
    assert (our_enc(src, src_pad) - memory).abs().max() <= TOL
    expected = their_dec(
        tgt, memory, tgt_mask=_blocked(6), tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad
    )
    assert (our_dec(tgt, memory, tgt_pad, src_pad) - expected).abs().max() <= TOL
    assert Encoder(_tiny(norm_first=False)).norm is None  # post-norm layers already end in a norm


def test_subsequent_mask_is_seed_004s_M_and_torchs():
    M = subsequent_mask(5)
    assert torch.equal(M, nn.Transformer.generate_square_subsequent_mask(5))
    assert torch.equal(M == 0, torch.ones(5, 5, dtype=torch.bool).tril())  # 0 on and below the diagonal
    assert torch.isinf(M[0, 1:]).all() and (M[0, 1:] < 0).all()


def test_sinusoidal_positions_follow_section_3_5():
    table = sinusoidal_positions(10, 8)
    for pos, i in ((3, 0), (7, 1), (9, 3)):
        angle = pos / 10000 ** (2 * i / 8)
        assert abs(table[pos, 2 * i].item() - math.sin(angle)) < 1e-6
        assert abs(table[pos, 2 * i + 1].item() - math.cos(angle)) < 1e-6


# ---------------------------------------------------------------- the whole model


def test_editing_future_target_tokens_leaves_earlier_outputs_unchanged():
    torch.manual_seed(0)
    model = Transformer(_tiny()).eval()
    src = torch.randint(0, 50, (2, 7))
    tgt = torch.randint(0, 50, (2, 6))
    edited = tgt.clone()
    edited[:, 3:] = (edited[:, 3:] + 1) % 50
    with torch.no_grad():
        before, after = model(src, tgt), model(src, edited)
    assert before.shape == (2, 6, 50)
    assert (before[:, :3] - after[:, :3]).abs().max() == 0
    assert (before[:, 3:] - after[:, 3:]).abs().max() > 1e-4


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_full_model_matches_nn_transformer_when_norm_first():
    """Same embeddings and generator around nn.Transformer (which always has final norms)."""
    torch.manual_seed(0)
    ours = Transformer(_tiny(norm_first=True)).eval()
    theirs = nn.Transformer(
        D, HEADS, 2, 2, FF, dropout=0.0, layer_norm_eps=EPS, batch_first=True, norm_first=True
    ).eval()
    for mine, its in zip([*ours.encoder.layers, *ours.decoder.layers], [*theirs.encoder.layers, *theirs.decoder.layers]):
        _copy_layer(mine, its)
    _copy_norm(ours.encoder.norm, theirs.encoder.norm)
    _copy_norm(ours.decoder.norm, theirs.decoder.norm)
    src_ids, tgt_ids = torch.randint(0, 50, (3, 7)), torch.randint(0, 50, (3, 6))
    _, _, src_pad, tgt_pad = _data()
    hidden = theirs(
        ours.src_embed(src_ids),
        ours.tgt_embed(tgt_ids),
        tgt_mask=_blocked(6),
        src_key_padding_mask=src_pad,
        tgt_key_padding_mask=tgt_pad,
        memory_key_padding_mask=src_pad,
    )
    expected = hidden @ ours.src_embed.tokens.weight.T  # the tied pre-softmax projection
    assert (ours(src_ids, tgt_ids, src_pad, tgt_pad) - expected).abs().max() <= TOL


def test_shared_embeddings_are_one_matrix():
    model = Transformer(_tiny())
    weight = model.src_embed.tokens.weight
    assert model.tgt_embed.tokens.weight is weight and model.generator.weight is weight
    separate = Transformer(_tiny(share_embeddings=False))
    assert _count(separate) - _count(model) == 2 * 50 * D


# ---------------------------------------------------------------- parameter counts


def _paper_count(d_model, d_ff, heads, layers=6, vocab=37000, d_k=None, d_v=None):
    """Closed form from sections 3.1-3.4, biases on every projection, embedding counted once.

    attention: Q, K (d_model -> heads*d_k), V (d_model -> heads*d_v), O (heads*d_v -> d_model);
    FFN: d_model -> d_ff -> d_model; LayerNorm: 2*d_model; encoder layer: attn + FFN + 2 norms;
    decoder layer: 2 attn + FFN + 3 norms; one shared (vocab, d_model) matrix, generator without bias.
    """
    d_k = d_k or d_model // heads
    d_v = d_v or d_model // heads
    attn = 2 * (d_model * heads * d_k + heads * d_k) + d_model * heads * d_v + heads * d_v + heads * d_v * d_model + d_model
    ffn = 2 * d_model * d_ff + d_ff + d_model
    encoder = layers * (attn + ffn + 2 * 2 * d_model)
    decoder = layers * (2 * attn + ffn + 3 * 2 * d_model)
    return encoder + decoder + vocab * d_model


def test_parameter_counts_against_table_3():
    """Table 3 lists 65M (base) and 213M (big), rounded, for the shared 37000-token vocabulary.

    Convention here: vocab 37000, source/target embedding and pre-softmax weights one matrix
    counted once, biases on all projections, no generator bias. That gives 63.08M for base
    (2.9% under 65M) and 214.25M for big (0.6% over 213M): the paper does not state its
    counting convention, and no single vocabulary size reproduces both of its figures.
    Untied embeddings would add 2 x 37000 x d_model (37.9M for base), far from either figure.
    """
    with torch.device("meta"):
        base = _count(Transformer(TransformerConfig.base()))
        big = _count(Transformer(TransformerConfig.big()))
        row_a = [_count(Transformer(TransformerConfig(heads=h, d_k=512 // h, d_v=512 // h))) for h in (1, 4, 16, 32)]
        row_b = _count(Transformer(TransformerConfig(d_k=16)))
    assert base == _paper_count(512, 2048, 8) == 63_082_496
    assert big == _paper_count(1024, 4096, 16) == 214_245_376
    assert abs(base - 65e6) / 65e6 < 0.03
    assert abs(big - 213e6) / 213e6 < 0.01
    # Table 3 row (A): varying heads at constant computation leaves the count unchanged
    assert row_a == [base] * 4
    # row (B), d_k = 16: the paper's 58M is 7M under its base; ours drops by the same, rounded
    assert row_b == _paper_count(512, 2048, 8, d_k=16)
    assert round((base - row_b) / 1e6) == 65 - 58


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_parameter_count_vs_nn_transformer():
    """nn.Transformer(d_model=512, nhead=8) has no embeddings or generator but always has final
    encoder and decoder LayerNorms; our post-norm model has none, our pre-norm model has both."""
    with torch.device("meta"):
        theirs = _count(nn.Transformer(d_model=512, nhead=8, dim_feedforward=2048))
        post = _count(Transformer(TransformerConfig.base()))
        pre = _count(Transformer(TransformerConfig(norm_first=True)))
    embedding = 37000 * 512  # shared: source, target and generator, counted once
    final_norms = 2 * (2 * 512)
    assert post - embedding + final_norms == theirs
    assert pre - embedding == theirs


def test_big_preset_is_table_3s():
    big = TransformerConfig.big()
    assert (big.d_model, big.d_ff, big.heads, big.layers, big.dropout) == (1024, 4096, 16, 6, 0.3)
    assert (big.d_k, big.d_v) == (64, 64)


def test_unequal_d_k_and_d_v_run_and_count():
    config = _tiny(d_k=8, d_v=6)
    model = Transformer(config)
    out = model(torch.randint(0, 50, (2, 5)), torch.randint(0, 50, (2, 4)))
    assert out.shape == (2, 4, 50)
    assert _count(model) == _paper_count(D, FF, HEADS, layers=2, vocab=50, d_k=8, d_v=6)


# ---------------------------------------------------------------- errors


def test_config_errors_are_pinned():
    with pytest.raises(ConfigError, match=r"^TransformerConfig: d_model=510 is not divisible by heads=8$"):
        TransformerConfig(d_model=510)
    with pytest.raises(ConfigError, match=r"^TransformerConfig: dropout=1.0 must be in \[0, 1\)$"):
        TransformerConfig(dropout=1.0)
    with pytest.raises(ConfigError, match=r"^TransformerConfig: d_k=0 must be positive$"):
        TransformerConfig(d_k=0)
    with pytest.raises(ConfigError, match=r"^TransformerConfig: share_embeddings='yes' must be True or False$"):
        TransformerConfig(share_embeddings="yes")


def test_shape_errors_are_pinned():
    layer = DecoderLayer(_tiny())
    with pytest.raises(ShapeError) as info:
        layer(torch.zeros(2, 6, D), torch.zeros(2, 7, 8))
    assert str(info.value).splitlines()[0] == (
        "DecoderLayer.forward: memory.shape[2] is 8, but d_model=16 (bound by the config)"
    )
    with pytest.raises(ShapeError, match=r"ids.shape\[1\] is 17, but max_seq=16"):
        Transformer(_tiny())(torch.zeros(1, 17, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long))
