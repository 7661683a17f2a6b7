"""GPT-2: equal to transformers' GPT2Model with copied weights, released parameter counts, causality."""

import pytest
import torch

from reference_models.gpt2 import PRESETS, GPT2Config, GPT2Model
from shapecheck.errors import ConfigError, ShapeError

transformers = pytest.importorskip("transformers")

TINY = GPT2Config(vocab=97, max_seq=32, d_model=32, layers=2, heads=4, d_ff=128)
CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def _hf_config(config: GPT2Config, **kwargs):
    return transformers.GPT2Config(
        vocab_size=config.vocab,
        n_positions=config.max_seq,
        n_embd=config.d_model,
        n_layer=config.layers,
        n_head=config.heads,
        n_inner=config.d_ff,
        layer_norm_epsilon=config.eps,
        bos_token_id=None,
        eos_token_id=None,
        **kwargs,
    )


def _count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _pair():
    torch.manual_seed(0)
    hf = transformers.GPT2Model(_hf_config(TINY, attn_implementation="eager")).eval()
    ours = GPT2Model(TINY).eval()
    # Conv1D keeps (in, out); nn.Linear keeps (out, in)
    state = {k: (v.t() if k.endswith(CONV1D) else v) for k, v in hf.state_dict().items()}
    ours.load_state_dict(state, strict=True)  # same module names, every key matched
    return ours, hf


def test_matches_transformers_gpt2_with_copied_weights():
    ours, hf = _pair()
    ids = torch.randint(0, TINY.vocab, (3, 11), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = hf(ids).last_hidden_state
        got = ours(ids)
    assert got.shape == (3, 11, 32)
    assert (got - expected).abs().max() <= 1e-5


def test_tied_head_gives_transformers_lm_logits():
    ours, hf = _pair()
    head = transformers.GPT2LMHeadModel(hf.config).eval()
    head.transformer.load_state_dict(hf.state_dict())
    head.lm_head.weight = head.transformer.wte.weight
    ids = torch.randint(0, TINY.vocab, (2, 7), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert (ours.logits(ours(ids)) - head(ids).logits).abs().max() <= 1e-5


@pytest.mark.parametrize("name", ["gpt2", "gpt2-medium"])
def test_preset_parameter_counts_equal_transformers(name):
    config = PRESETS[name]()
    with torch.device("meta"):
        ours = _count(GPT2Model(config))
        theirs = _count(transformers.GPT2Model(_hf_config(config)))
    assert ours == theirs
    if name == "gpt2":
        assert ours == 124_439_808  # transformers' GPT2Model("gpt2"): wte tied, no separate head


def test_presets_are_the_released_sizes():
    sizes = {name: (c.d_model, c.layers, c.heads, c.d_ff) for name, c in ((n, f()) for n, f in PRESETS.items())}
    assert sizes == {
        "gpt2": (768, 12, 12, 3072),
        "gpt2-medium": (1024, 24, 16, 4096),
        "gpt2-large": (1280, 36, 20, 5120),
        "gpt2-xl": (1600, 48, 25, 6400),
    }


def test_editing_future_tokens_leaves_earlier_outputs_unchanged():
    ours, _ = _pair()
    ids = torch.randint(0, TINY.vocab, (2, 9), generator=torch.Generator().manual_seed(3))
    edited = ids.clone()
    edited[:, 5:] = (edited[:, 5:] + 1) % TINY.vocab
    with torch.no_grad():
        before, after = ours(ids), ours(edited)
    assert (before[:, :5] - after[:, :5]).abs().max() == 0
    assert (before[:, 5:] - after[:, 5:]).abs().max() > 1e-3


def test_config_errors_are_pinned():
    with pytest.raises(ConfigError, match=r"^GPT2Config: d_model=770 is not divisible by heads=12$"):
        GPT2Config(d_model=770)
    with pytest.raises(ConfigError, match=r"^GPT2Config: layers=0 must be positive$"):
        GPT2Config(layers=0)
    with pytest.raises(ConfigError, match=r"^GPT2Config: eps=0 must be a positive number$"):
        GPT2Config(eps=0)


def test_shape_errors_are_pinned():
    ours, _ = _pair()
    with pytest.raises(ShapeError) as info:
        ours.logits(torch.zeros(2, 5, 16))
    assert str(info.value).splitlines()[0] == (
        "GPT2Model.logits: hidden.shape[2] is 16, but d_model=32 (bound by the config)"
    )
    with pytest.raises(ShapeError, match=r"input_ids.shape\[1\] is 33, but max_seq=32"):
        ours(torch.zeros(1, 33, dtype=torch.long))
