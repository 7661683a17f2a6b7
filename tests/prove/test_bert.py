"""prove on BERT: the learned positions' ``seq <= max_seq`` constraint, ours and transformers'."""

from __future__ import annotations

import pytest
import torch

from reference_models.bert import BertConfig, BertModel
from shapecheck import ShapeError
from shapecheck.prove import prove


@pytest.fixture(scope="module")
def bert_base():
    with torch.device("meta"):  # export needs shapes only; nothing is allocated
        model = BertModel(BertConfig.base())
    return prove(model)  # weights on the meta device: nothing to run, so no samples


def test_bert_base_finds_seq_at_most_512(bert_base):
    assert "seq <= 512" in bert_base.constraints
    assert bert_base.ok and bert_base.samples == [] and not bert_base.checked
    assert "meta device" in bert_base.verdict and "shapes check out" not in bert_base.verdict


def test_bert_base_output_shapes(bert_base):
    assert bert_base.inputs == {"input_ids": ["batch", "seq"]}
    assert bert_base.outputs == {"sequence_output": ["batch", "seq", 768], "pooled_output": ["batch", 768]}
    assert bert_base.output_shape == ["batch", "seq", 768]


def test_bert_base_divisibility_from_its_config(bert_base):
    assert "d_model % heads == 0" in bert_base.constraints


def test_transformers_bert_base_gives_the_same_constraint_and_shapes():
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        model = transformers.BertModel(transformers.BertConfig())  # BERT-base sizes, no weights downloaded
    result = prove(model, sizes={"d_model": 768}, samples=0)
    assert "seq <= 512" in result.constraints
    assert result.outputs == {"last_hidden_state": ["batch", "seq", 768], "pooler_output": ["batch", 768]}


def test_the_bound_is_tight_sampled_at_it_and_eager_fails_past_it():
    config = BertConfig(vocab=50, d_model=16, layers=1, heads=2, d_ff=32, max_seq=12)
    model = BertModel(config)
    result = prove(model, caps={"seq": 64})
    assert "seq <= 12" in result.constraints
    kinds = {s.kind: s.sizes["seq"] for s in result.samples}
    assert kinds["top"] == 12 and kinds["past"] == 13 and result.ok and result.checked
    model(torch.zeros(1, 12, dtype=torch.long))
    with pytest.raises(ShapeError):
        model(torch.zeros(1, 13, dtype=torch.long))
