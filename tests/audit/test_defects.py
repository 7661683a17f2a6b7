"""Planted defects are each found and explained: dead, missing, bias-less, tied, shared, frozen, duplicated."""

import torch
from torch import nn

from reference_models.attention import MultiHeadAttention
from reference_models.packed import PackedAttentionConfig, PackedMultiheadAttention
from shapecheck.auditing import audit
from shapecheck.auditing.render import verdict

D = 16  # d_model of every planted module


def _texts(component):
    return [d.describe() for d in component.differences]


def test_unused_extra_linear_is_dead_and_extra(planted):
    result = audit(planted.UnusedExtraLinear(D, 2))
    assert not result.clean
    assert {p.name for p in result.dead} == {"extra.weight", "extra.bias"}
    assert sum(p.numel for p in result.dead) == D * D + D
    (block,) = result.components
    (diff,) = block.differences
    assert diff.amount == D * D + D and diff.symbolic == "+(d_model² + d_model)"
    assert diff.text.startswith("extra (16×16, 16) is not part of the attention formula")


def test_missing_output_projection_is_explained(planted):
    result = audit(planted.MissingOutProjection(D, 2))
    (block,) = result.mismatches
    assert _texts(block) == ["out projection missing: −(d_model² + d_model) (−272)"]  # d_model = 16
    assert block.counted == 3 * (D * D + D) and block.expected == 4 * (D * D + D)
    assert not result.dead  # every parameter it has is used


def test_key_projection_without_bias_is_explained(planted):
    result = audit(planted.KeyWithoutBias(D, 2))
    (block,) = result.mismatches
    assert _texts(block) == ["k_proj has no bias: −d_model (−16)"]
    assert block.expected - block.counted == D


def test_tied_embedding_is_counted_once_and_named(planted):
    module = planted.TiedLM(D, 2, vocab=50)
    result = audit(module)
    assert result.clean  # tying is accounted for, not a defect
    (group,) = result.shared
    assert set(group.names) == {"embed.weight", "lm_head.weight"} and group.numel == 50 * D
    naive = sum(p.numel() for _, p in module.named_parameters(remove_duplicate=False))
    assert result.totals.total == naive - 50 * D == sum(p.numel() for p in module.parameters())
    assert result.totals.shared_once == 50 * D
    assert result.totals.embedding_tables == 50 * D and result.totals.non_embedding == 4 * D * D + 4 * D


def test_cross_layer_sharing_is_one_module_group(planted):
    result = audit(planted.SharedLayers(D, 2))
    (group,) = result.shared
    assert group.module and group.names == ("layers.0", "layers.1") and group.numel == 4 * D * D + 4 * D
    assert result.totals.total == 4 * D * D + 4 * D
    assert [c.path for c in result.components] == ["layers.0"]


def test_frozen_is_reported_apart_from_dead():
    module = MultiHeadAttention(D, 2)
    module.k_proj.requires_grad_(False)
    result = audit(module)
    assert {p.name for p in result.frozen} == {"k_proj.weight", "k_proj.bias"}
    assert result.dead == () and result.clean
    assert [p.requires_grad for p in module.k_proj.parameters()] == [False, False]  # left as it was


def test_frozen_and_unused_is_dead(planted):
    module = planted.UnusedExtraLinear(D, 2)
    module.extra.requires_grad_(False)
    result = audit(module)
    assert {(p.name, p.frozen) for p in result.dead} == {("extra.weight", True), ("extra.bias", True)}


def test_liveness_leaves_gradients_alone():
    module = MultiHeadAttention(D, 2)
    module.q_proj.weight.grad = torch.ones_like(module.q_proj.weight)
    audit(module)
    assert torch.equal(module.q_proj.weight.grad, torch.ones(D, D)) and module.k_proj.weight.grad is None


def test_second_output_projection_duplicates_fuse_heads():
    module = PackedMultiheadAttention(PackedAttentionConfig(D, 2))
    module.out_proj = nn.Linear(D, D)  # never called: fuse_heads is the output projection
    result = audit(module)
    (block,) = result.mismatches
    (diff,) = block.differences
    assert "duplicates the output projection" in diff.text and diff.amount == D * D + D
    assert {p.name for p in result.dead} == {"out_proj.weight", "out_proj.bias"}


def test_meta_module_needs_a_probe_for_liveness(planted):
    with torch.device("meta"):
        big = planted.UnusedExtraLinear(512, 8)
    result = audit(big)
    assert not result.liveness.ran and "meta" in result.liveness.detail
    with torch.device("meta"):
        clean = audit(MultiHeadAttention(512, 8))
    assert clean.clean is None and clean.counts_clean and clean.exit_code == 0  # clean counts do not claim liveness
    assert verdict(clean).startswith("parameters accounted for; liveness not checked (") and "meta" in verdict(clean)
    probed = audit(big, probe=planted.UnusedExtraLinear(D, 2))
    assert {p.name: p.numel for p in probed.dead} == {"extra.weight": 512 * 512, "extra.bias": 512}  # sizes of the big one


class _IgnoresItsInput(MultiHeadAttention):
    """Weights that are there, but an output no parameter reaches (zeros of the input's shape)."""

    def forward(self, query, key=None, value=None, **_):  # type: ignore[override]
        return torch.zeros_like(query)


class _ReturnsItsInput(MultiHeadAttention):
    def forward(self, query, key=None, value=None, **_):  # type: ignore[override]
        return query


def test_an_output_no_parameter_reaches_makes_every_parameter_dead():
    for module in (_IgnoresItsInput(D, 2), _ReturnsItsInput(D, 2)):
        result = audit(module)
        assert result.liveness.ran, result.liveness.detail
        assert {p.name for p in result.dead} == {name for name, _ in module.named_parameters()}
        assert result.clean is False
