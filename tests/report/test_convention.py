"""report calls a block as the convention probe decided on a small CPU instance of its class (shapecheck.convention).

Each module reads hidden states in a way no name, attribute or annotation says (tests/support/conventions.py); the
count must equal FlopCounterMode's on the module called the way it really reads its inputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode
from typer.testing import CliRunner

from shapecheck.cli import app
from shapecheck.counting import flop_counter_mapping
from shapecheck.target import load_target

SUPPORT = Path(__file__).parents[1] / "support" / "conventions.py"
BATCH, SEQ, WIDTH = 2, 24, 16


def report(name: str) -> dict:
    result = CliRunner().invoke(app, ["report", f"{SUPPORT}:{name}", "--d-model", str(WIDTH), "--heads", "2", "--batch",
                                      str(BATCH), "--seq-len", str(SEQ), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def counted(name: str, inputs_of) -> int:
    module = load_target(f"{SUPPORT}:{name}").obj(WIDTH, 2).to("meta")
    with FlopCounterMode(display=False, custom_mapping=flop_counter_mapping()) as counter, torch.no_grad():
        module(*inputs_of(module))
    return counter.get_total_flops()


def _states(*shape: int) -> torch.Tensor:
    return torch.zeros(*shape, device="meta")


@pytest.mark.parametrize("name", ["SeqFirst", "LyingSeqFirst"])
def test_a_module_that_behaves_seq_first_is_fed_seq_batch_width(name):
    data = report(name)
    expected = counted("BatchFirst", lambda m: (_states(BATCH, SEQ, WIDTH),))  # the same attention over SEQ tokens
    assert expected == counted(name, lambda m: (_states(SEQ, BATCH, WIDTH),))
    assert data["total"]["flops"] == expected  # fed (batch, seq, width) it attends over BATCH tokens: far fewer FLOPs
    assert data["convention"]["layout"] == "seq-first" and data["convention"]["decided"] is True
    assert data["convention"]["layout_declared"] == "batch-first"  # no attribute (or one that lies): the default


def test_query_key_value_self_attention_gets_one_sequence_three_times():
    data = report("CausalQKV")
    x = _states(BATCH, SEQ, WIDTH)
    assert data["total"]["flops"] == counted("CausalQKV", lambda m: (x, x, x))
    assert data["convention"]["attention"] == "self"


def test_required_rotary_table_and_mask_are_built_as_the_module_takes_them():
    rotary = report("NeedsRotary")
    mask = report("NeedsMask")
    x = _states(BATCH, SEQ, WIDTH)
    table = torch.ones(SEQ, WIDTH // 4, dtype=torch.complex64, device="meta")  # (seq, d_head / 2)
    assert rotary["total"]["flops"] == counted("NeedsRotary", lambda m: (x, table))
    keep = torch.ones(BATCH, 1, SEQ, SEQ, dtype=torch.bool, device="meta")
    assert mask["total"]["flops"] == counted("NeedsMask", lambda m: (x, keep))
    assert rotary["convention"]["supplied"] == {"freqs_cis": "rotary"}
    assert mask["convention"]["mask"]["required"] is True and mask["convention"]["mask"]["kind"] == "keep"
    assert any(note.startswith("convention (probed)") for note in mask["notes"])


def _conventions(spec: str) -> dict:
    runs = {
        "verify": ["verify", spec, "--max-examples", "2", "--property", "output_shape", "--format", "json"],
        "prove": ["prove", spec, "--d-model", "16", "--heads", "2", "--format", "json"],
        "audit": ["audit", spec, "--d-model", "16", "--heads", "2", "--format", "json"],
        "report": ["report", spec, "--d-model", "16", "--heads", "2", "--format", "json"],
    }
    return {command: json.loads(CliRunner().invoke(app, args).stdout)["convention"] for command, args in runs.items()}


def test_the_convention_key_has_the_same_fields_in_all_four_commands():
    found = _conventions(f"{SUPPORT}:SeqFirst")
    keys = {command: sorted(c) for command, c in found.items()}
    assert len({tuple(k) for k in keys.values()}) == 1, keys
    assert {c["query"] for c in found.values()} == {"x"} and {c["attention"] for c in found.values()} == {"self"}
    # verify calls in the declared layout (batch_independence judges it) and records the behaviour beside it
    assert found["verify"]["layout_declared"] == "batch-first" and found["verify"]["layout"] == "seq-first"
    assert {found[c]["layout"] for c in ("prove", "audit", "report")} == {"seq-first"}


def test_transformers_attention_gets_its_rotary_tables_from_the_probe():
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaAttention

    result = CliRunner().invoke(app, ["report", "transformers.models.llama.modeling_llama:LlamaAttention", "--init",
                                      "layer_idx=0", "--seq-len", "64", "--format", "json"])
    assert result.exit_code == 0, result.output  # position_embeddings is required: the signature alone cannot build it
    data = json.loads(result.stdout)
    config = transformers.LlamaConfig()
    module = LlamaAttention(config, layer_idx=0).to("meta")
    head = config.hidden_size // config.num_attention_heads
    x, table = _states(1, 64, config.hidden_size), _states(1, 64, head)
    with FlopCounterMode(display=False, custom_mapping=flop_counter_mapping()) as counter, torch.no_grad():
        module(x, (table, table), _states(1, 1, 64, 64))
    assert data["total"]["flops"] == counter.get_total_flops()
    assert data["convention"]["supplied"] == {"position_embeddings": "rotary"}


def test_a_decoder_layer_gets_rotary_tables_of_its_attentions_head_size():
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    result = CliRunner().invoke(app, ["report", "transformers.models.llama.modeling_llama:LlamaDecoderLayer", "--init",
                                      "layer_idx=0", "--seq-len", "32", "--format", "json"])
    assert result.exit_code == 0, result.output  # the head size is its self_attn's: the layer itself declares none
    data = json.loads(result.stdout)
    config = transformers.LlamaConfig()
    module = LlamaDecoderLayer(config, layer_idx=0).to("meta")
    table = _states(1, 32, config.hidden_size // config.num_attention_heads)
    with FlopCounterMode(display=False, custom_mapping=flop_counter_mapping()) as counter, torch.no_grad():
        module(_states(1, 32, config.hidden_size), attention_mask=_states(1, 1, 32, 32), position_embeddings=(table, table))
    assert data["total"]["flops"] == counter.get_total_flops()


@pytest.mark.parametrize("name, kv_heads", [("EqualKV", "equal"), ("SharedKV", "grouped"), ("BatchFirst", "none")])
def test_the_kv_head_counts_a_module_accepts_are_probed_once_for_all_four_commands(name, kv_heads):
    found = _conventions(f"{SUPPORT}:{name}")
    assert {command: c["heads"]["kv_heads"] for command, c in found.items()} == dict.fromkeys(found, kv_heads)
    if kv_heads == "equal":  # its kv_heads parameter builds, but forward splits keys into `heads` heads
        assert all("is invalid for input of size" in c["heads"]["reason"] for c in found.values())
