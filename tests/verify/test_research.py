"""Attention as research code and other packages write it: each builds and runs without a factory, and passes.

The modules under tests/verify/research/ are ours, written in the conventions of nanoGPT (a GPTConfig
object), tutorials (a ModuleList of heads, embed_size/head_size, a dropout module), einops code, and
fairseq (sequence-first, encoder_padding_mask). Other packages' classes are imported from the installed
package and skipped when it does not import on this machine.
"""

import importlib.util
import os

import pytest

from shapecheck.target import load_target
from shapecheck.testing import VerifyOptions, verify

from .conftest import EXAMPLES, HERE

RESEARCH = os.path.join(HERE, "research")


def _report(spec: str):
    return verify(load_target(spec), VerifyOptions(max_examples=min(EXAMPLES, 8)))


def _statuses(report) -> dict:
    return {r.name: r.status for r in report.results}


@pytest.mark.parametrize("spec, passed", [
    ("nanogpt.py:CausalSelfAttention", {"causal", "reference"}),  # GPTConfig built by role; causal buffer detected
    ("per_head.py:MultiHeadAttention", {"padding", "permutation"}),  # embed_size, num_heads, head_size, a Dropout module
    ("einops_attention.py:Attention", {"padding", "reference"}),  # to_qkv + to_out, dim_head
    ("fairseq_style.py:TransformerEncoderLayer", {"padding", "permutation", "batch_independence"}),  # (T, B, C)
])
def test_research_convention_module_passes(spec, passed):
    report = _report(os.path.join(RESEARCH, spec))
    assert report.passed, [(r.name, r.message, r.counterexample) for r in report.results if r.status == "failed"]
    statuses = _statuses(report)
    assert {statuses[n] for n in passed} == {"passed"}, statuses


def test_nanogpt_config_object_is_shown_with_replaced_defaults():
    report = _report(os.path.join(RESEARCH, "nanogpt.py:CausalSelfAttention"))
    assert "config: GPTConfig(" in report.construction and "(default 768)" in report.construction


def test_fairseq_layer_is_called_sequence_first():
    notes = _report(os.path.join(RESEARCH, "fairseq_style.py:TransformerEncoderLayer")).notes
    assert any(n.startswith("layout: seq-first") for n in notes) and any("encoder_padding_mask (True = ignore" in n for n in notes)


def _vit_pytorch_file() -> str:
    spec = importlib.util.find_spec("vit_pytorch")
    if spec is None or spec.origin is None:
        pytest.skip("vit-pytorch is not installed")
    return os.path.join(os.path.dirname(spec.origin), "vit.py")


@pytest.mark.parametrize("spec, module", [
    ("x_transformers.x_transformers:Attention", "x_transformers"),
    ("whisper.model:MultiHeadAttention", "whisper"),
    ("timm.models.vision_transformer:Attention", "timm.models"),
    ("litgpt.model:CausalSelfAttention", "litgpt.model"),
])
def test_other_package_attention_passes(spec, module):
    try:
        importlib.import_module(module)
    except Exception as error:  # noqa: BLE001 - timm needs torchvision, litgpt needs lightning: skip cleanly
        pytest.skip(f"{module} does not import here: {type(error).__name__}: {error}")
    report = _report(spec)
    assert report.passed, [(r.name, r.message, r.counterexample) for r in report.results if r.status == "failed"]


def test_partial_rotary_with_cos_and_sin_apart_passes():
    """A module that rotates a quarter of each head (litgpt, GPT-NeoX) and takes cos and sin as two arguments:
    the probe finds the tables' width by behaviour (whole-head tables are refused) and leaves out the optional
    cache positions, which need a cache built beforehand."""
    report = _report(os.path.join(RESEARCH, "partial_rotary.py:CausalSelfAttention"))
    assert report.passed, [(r.name, r.message, r.counterexample) for r in report.results if r.status == "failed"]
    assert "rotary: tables 1/4 of the head size wide (the module rotates part of each head)" in report.notes
    assert _statuses(report)["reference"] == "passed"


def test_vit_pytorch_attention_loaded_from_its_file():
    report = _report(f"{_vit_pytorch_file()}:Attention")
    assert report.passed and _statuses(report)["permutation"] == "passed"


def test_projections_with_unlisted_names_are_found_by_data_flow():
    report = _report(os.path.join(RESEARCH, "odd_names.py:Attention"))
    assert report.passed and _statuses(report)["reference"] == "passed"
    assert "reference built from make_q/make_k/make_v + mix (by data flow)" in report.notes
    scaled = verify(load_target(os.path.join(RESEARCH, "odd_names.py:Scaled")), VerifyOptions(max_examples=EXAMPLES, fail_fast=True))
    failed = next(r for r in scaled.results if r.status == "failed")
    assert failed.name == "reference" and failed.counterexample["heads"] >= 2  # one head: √d_model == √d_head
