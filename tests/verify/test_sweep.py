"""The public sweep: 24 correct attention classes of transformers and torch, built from small configs, pass with default flags.

Each is built the way a user's command line builds it (``load_target`` + default options, no
weights downloaded); a failure here is a false alarm. Beyond "passed", each family asserts the
property that shows verify understood its convention (rotary and grouped heads in the reference,
causality from the 4-D mask, the scale warning for modules that do not scale by 1/√d_head).
"""

import inspect

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES

T = "transformers.models."
TRANSFORMERS = [
    "bert.modeling_bert:BertSelfAttention", "roberta.modeling_roberta:RobertaSelfAttention",
    "distilbert.modeling_distilbert:DistilBertSelfAttention", "albert.modeling_albert:AlbertAttention",
    "electra.modeling_electra:ElectraSelfAttention", "gpt2.modeling_gpt2:GPT2Attention", "gpt_neo.modeling_gpt_neo:GPTNeoSelfAttention",
    "gptj.modeling_gptj:GPTJAttention", "opt.modeling_opt:OPTAttention", "bloom.modeling_bloom:BloomAttention",
    "llama.modeling_llama:LlamaAttention", "mistral.modeling_mistral:MistralAttention", "qwen2.modeling_qwen2:Qwen2Attention",
    "gemma.modeling_gemma:GemmaAttention", "phi.modeling_phi:PhiAttention", "falcon.modeling_falcon:FalconAttention",
    "t5.modeling_t5:T5Attention", "bart.modeling_bart:BartAttention", "whisper.modeling_whisper:WhisperAttention",
    "vit.modeling_vit:ViTAttention", "clip.modeling_clip:CLIPAttention",
]
TORCH = ["torch.nn:MultiheadAttention", "torch.nn:TransformerEncoderLayer", "torch.nn:TransformerDecoderLayer"]


SWEEP = min(EXAMPLES, 6)  # 27 modules: a few examples each keep the suite fast; the CLI default is 50


def _report(spec: str, **options):
    return verify(load_target(spec), VerifyOptions(max_examples=SWEEP, **options))


def _statuses(report) -> dict:
    return {r.name: r.status for r in report.results}


@pytest.mark.parametrize("spec", [T + s for s in TRANSFORMERS] + TORCH, ids=lambda s: s.split(":")[1])
def test_public_class_passes_with_default_flags(spec):
    if spec.startswith(T):
        pytest.importorskip("transformers")
    report = _report(spec)
    assert report.passed, [(r.name, r.message, r.counterexample) for r in report.results if r.status == "failed"]
    assert _statuses(report)["output_shape"] == "passed"


@pytest.mark.parametrize("name", ["llama.modeling_llama:LlamaAttention", "mistral.modeling_mistral:MistralAttention",
                                  "qwen2.modeling_qwen2:Qwen2Attention"])
def test_rotary_grouped_decoders_are_checked_against_the_reference_and_for_causality(name):
    pytest.importorskip("transformers")
    report = _report(T + name)
    statuses = _statuses(report)
    assert statuses["reference"] == statuses["causal"] == "passed"  # rotary + grouped kv heads; causal from the 4-D mask
    assert any("causal triangle" in note for note in report.notes)
    assert any("position_embeddings (rotary" in note for note in report.notes)


def test_gptj_adjacent_pair_rotary_is_checked_against_the_reference():
    gptj = pytest.importorskip("transformers.models.gptj.modeling_gptj")
    takes_tables = "position_embeddings" in inspect.signature(gptj.GPTJAttention.forward).parameters
    report = _report(T + "gptj.modeling_gptj:GPTJAttention")
    reference = next(r for r in report.results if r.name == "reference")
    if takes_tables:  # transformers >= 5.24: (sin, cos) half-width tables from outside, every-two rotation, partial rotary
        assert reference.status == "passed"
        assert any("position_embeddings (rotary" in note for note in report.notes)
    else:  # 5.17: the rotation is computed inside from position_ids, which the reference does not model: said, not failed
        assert reference.status == "skipped" and "positions inputs" in reference.reason


def test_a_module_that_does_not_scale_gets_a_warning_and_passes_with_scale_1():
    pytest.importorskip("transformers")
    warned = next(r for r in _report(T + "gpt_neo.modeling_gpt_neo:GPTNeoSelfAttention").results if r.name == "reference")
    assert warned.status == "warning" and "GPTNeoSelfAttention" in warned.message and "--scale 1" in warned.message
    assert warned.counterexample["d_head"] >= 2  # with d_head = 1 the two scales agree
    accepted = next(r for r in _report(T + "gpt_neo.modeling_gpt_neo:GPTNeoSelfAttention", scale=1.0).results if r.name == "reference")
    assert accepted.status == "passed"


def test_a_declared_scale_is_read_and_shown():
    pytest.importorskip("transformers")
    report = _report(T + "t5.modeling_t5:T5Attention")  # T5 declares scaling = 1.0
    assert _statuses(report)["reference"] == "passed"
    assert any("scale: T5Attention declares scaling=1" in note for note in report.notes)


def test_decoder_layer_is_fed_a_memory_longer_or_shorter_than_the_target():
    report = _report("torch.nn:TransformerDecoderLayer")
    assert any("memory=memory" in note for note in report.notes)
    assert _statuses(report)["padding"] == "passed"  # memory_key_padding_mask, on the memory's axis


def test_phi_projections_are_found_by_data_flow_and_partial_rotary_agrees():
    pytest.importorskip("transformers")
    report = _report(T + "phi.modeling_phi:PhiAttention")
    assert _statuses(report)["reference"] == "passed"
    assert any("dense (by data flow)" in note for note in report.notes)


@pytest.mark.parametrize("name", ["bart.modeling_bart:BartAttention", "t5.modeling_t5:T5Attention", "whisper.modeling_whisper:WhisperAttention"])
def test_an_optional_memory_is_exercised_with_another_length(name):
    pytest.importorskip("transformers")
    assert _statuses(_report(T + name, properties=("cross_attention",)))["cross_attention"] == "passed"


@pytest.mark.parametrize("name", ["helium.modeling_helium:HeliumAttention",  # rotate-half table re-expanded as adjacent pairs
                                  "stablelm.modeling_stablelm:StableLmAttention",  # partial rotary: its width constraint appears at 4
                                  "qwen3.modeling_qwen3:Qwen3Attention"])  # qk-norm: the reference applies q_norm / k_norm
def test_rope_followed_as_the_module_applies_it(name):
    pytest.importorskip("transformers")
    report = _report(T + name)
    assert report.passed, [(r.name, r.message, r.counterexample) for r in report.results if r.status == "failed"]
    assert _statuses(report)["reference"] == "passed"
