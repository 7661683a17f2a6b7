"""The 20 transformers models of issue 11, each from a small config: audit is clean, and every check ran.

Peers: ``sum(p.numel())`` of the model itself for the total, and the models' own
structure (Qwen2's output projection without a bias, Whisper's bias-free key
projection, ALBERT's embedding width E != H, Mixtral's router and grouped experts).
"""

from __future__ import annotations

import importlib.util
import os

import pytest

pytest.importorskip("transformers")

from shapecheck.auditing import audit  # noqa: E402
from shapecheck.auditing.recognize import recognize  # noqa: E402
from shapecheck.auditing.render import rows_sum  # noqa: E402

_SPEC = importlib.util.spec_from_file_location("audit_zoo", os.path.join(os.path.dirname(__file__), "zoo.py"))
zoo = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(zoo)


@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_model_audits_clean_with_liveness_run_and_the_real_total(name):
    model = zoo.ZOO[name]()
    result = audit(model)
    assert result.liveness.ran, result.liveness.detail
    assert result.clean is True, [(c.path, [d.describe() for d in c.differences]) for c in result.mismatches] + list(result.dead)
    assert result.totals.total == sum(p.numel() for p in model.parameters())
    assert rows_sum(result) == result.totals.total  # folded rows × their multiplicity add up (a tied tensor counts once)


def test_timm_vit_audits_clean_when_timm_imports():
    try:
        model = zoo.timm_vit()
    except Exception as error:  # noqa: BLE001 - timm installed without torchvision does not import
        pytest.skip(f"timm does not import here: {type(error).__name__}")
    result = audit(model)
    assert result.clean is True and result.totals.total == sum(p.numel() for p in model.parameters())


def _first(matches, kind):
    return next(m for m in matches if m.kind == kind)


def test_declared_bias_conventions_are_read_per_role():
    qwen = _first(recognize(zoo.ZOO["qwen2"]()), "attention").info
    assert qwen["bias"] == {"q": True, "k": True, "v": True, "o": False} == qwen["declared_bias"]
    whisper = _first(recognize(zoo.ZOO["whisper"]()), "attention").info
    assert whisper["bias"]["k"] is False and whisper["declared_bias"] == {"k": False}
    notes = {c.note for c in audit(zoo.ZOO["qwen2"]()).components if c.kind == "attention"}
    assert notes == {"bias on q, k, v (the Qwen2 family)"}  # the formula says which roles carry a bias
    llama = _first(recognize(zoo.ZOO["llama"]()), "attention").info
    assert llama["declared_by"] == "config.attention_bias=False" and (llama["h"], llama["h_kv"]) == (zoo.HEADS, 2)


def test_albert_embedding_width_e_is_its_own_symbol_with_the_factorised_projection():
    model = zoo.ZOO["albert"]()
    matches = recognize(model)
    words = next(m for m in matches if m.path == "embeddings.word_embeddings")
    projection = _first(matches, "projection")
    assert words.info["width"] == model.config.embedding_size and words.info["factorised_by"] == projection.path
    result = audit(model)
    component = result.component(projection.path)
    assert component.values == {"E": model.config.embedding_size, "d_model": model.config.hidden_size}
    assert component.expected == model.encoder.embedding_hidden_mapping_in.weight.numel() + model.config.hidden_size
    assert result.component("embeddings.LayerNorm").values == {"E": model.config.embedding_size}


def test_mixtral_router_and_grouped_experts():
    model = zoo.ZOO["mixtral"]()
    matches = recognize(model)
    router, experts = _first(matches, "moe_router"), _first(matches, "moe_experts")
    assert router.info == {"experts": 4, "d_model": zoo.D, "top_k": 2}
    assert experts.info == {"experts": 4, "d_model": zoo.D, "d_ff": zoo.FF, "gated": True}
    block = model.layers[0].mlp
    assert audit(model).component(experts.path).expected == sum(p.numel() for p in block.experts.parameters())


def test_gated_feed_forward_and_norm_kinds():
    matches = recognize(zoo.ZOO["llama"]())
    assert _first(matches, "feed_forward").info == {"d_model": zoo.D, "d_ff": zoo.FF, "gated": True}
    assert _first(matches, "norm").info["type"] == "RMSNorm"
    assert _first(recognize(zoo.ZOO["bert"]()), "norm").info["type"] == "LayerNorm"
