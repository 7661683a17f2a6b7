"""map_arguments: roles from the vocabulary, defaults kept or replaced (and shown), config objects, constraints."""

import textwrap

import pytest
from torch import nn

from shapecheck.errors import UsageError
from shapecheck.target import build, load_target, map_arguments, probe_constraints


def _target(tmp_path, body: str, name: str):
    path = tmp_path / "research_attn.py"
    path.write_text(textwrap.dedent(body))
    return load_target(f"{path}:{name}")


RESEARCH = """
    import torch
    from torch import nn

    class Tutorial(nn.Module):
        def __init__(self, embed_size, query_heads, head_size, attn_drop=nn.Dropout(0.0), block_size=1024):
            super().__init__()
            self.embed_size, self.heads, self.head_size, self.drop, self.block_size = embed_size, query_heads, head_size, attn_drop, block_size
            self.qkv = nn.Linear(embed_size, 3 * query_heads * head_size)

    class WithMlp(nn.Module):
        def __init__(self, dim, heads=8, hidden_dim=1408):
            super().__init__()
            self.dim, self.heads, self.hidden_dim = dim, heads, hidden_dim

    class OnlyHidden(nn.Module):
        def __init__(self, hidden=1408, n_filters=None, h=4):
            super().__init__()
            self.hidden, self.h = hidden, h
"""


def test_research_names_map_by_role_and_a_dropout_module_stays_a_module(tmp_path):
    module, construction = build(_target(tmp_path, RESEARCH, "Tutorial"), {"d_model": 8, "heads": 2, "d_head": 4, "dropout": 0.1})
    assert (module.embed_size, module.heads, module.head_size) == (8, 2, 4)
    assert isinstance(module.drop, nn.Dropout) and module.drop.p == 0.1
    assert construction.sources["query_heads"] == "heads" and construction.sources["attn_drop"] == "dropout"
    assert module.block_size == 1024  # no max_seq given: the default stays


def test_keep_defaults_keeps_them_unless_explicit(tmp_path):
    target = _target(tmp_path, RESEARCH, "WithMlp")
    kept = map_arguments(target, {"d_model": 8, "heads": 2}, keep_defaults=True)
    assert kept.arguments == {"dim": 8} and kept.replaced == {}
    given = map_arguments(target, {"d_model": 8, "heads": 2}, keep_defaults=True, explicit=("heads",))
    assert given.arguments == {"dim": 8, "heads": 2} and given.replaced == {"heads": 8}
    assert "heads=2 (default 8) [heads]" in given.describe()


def test_drawn_sizes_replace_defaults_and_an_mlp_hidden_dim_is_not_the_width(tmp_path):
    construction = map_arguments(_target(tmp_path, RESEARCH, "WithMlp"), {"d_model": 8, "heads": 2}, keep_defaults=False)
    assert construction.arguments == {"dim": 8, "heads": 2}  # hidden_dim beside dim is d_ff: never given the width
    assert construction.replaced == {"heads": 8}


def test_an_ambiguous_width_alone_is_the_width_and_its_replaced_default_is_printed(tmp_path):
    construction = map_arguments(_target(tmp_path, RESEARCH, "OnlyHidden"), {"d_model": 512, "heads": 2}, keep_defaults=False)
    assert construction.arguments["hidden"] == 512
    assert "hidden=512 (default 1408) [d_model]" in construction.describe()


CONFIGS = """
    from dataclasses import dataclass
    from typing import NamedTuple, Optional
    from torch import nn

    @dataclass
    class GPTConfig:
        block_size: int = 1024
        vocab_size: int = 50304
        n_layer: int = 12
        n_head: int = 12
        n_embd: int = 768
        dropout: float = 0.0
        bias: bool = True

    class CausalSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            assert config.n_embd % config.n_head == 0
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.n_head, self.n_embd, self.config = config.n_head, config.n_embd, config

    class ModelArgs(NamedTuple):
        dim: int
        n_heads: int
        n_kv_heads: Optional[int] = None

    class LlamaStyle(nn.Module):
        def __init__(self, args):
            super().__init__()
            self.n_kv = args.n_kv_heads or args.n_heads
            self.wq = nn.Linear(args.dim, args.dim, bias=False)

    class Anything(nn.Module):
        def __init__(self, params):
            super().__init__()
            self.width, self.heads = params.embed_dim, params.num_heads
            self.rate = params.attention_dropout
            self.vocab = params.vocab_size
"""


def test_a_config_dataclass_of_the_target_module_is_filled_by_role(tmp_path):
    module, construction = build(_target(tmp_path, CONFIGS, "CausalSelfAttention"), {"d_model": 8, "heads": 2, "dropout": 0.1})
    assert (module.config.n_embd, module.config.n_head, module.config.dropout) == (8, 2, 0.1)
    assert module.config.vocab_size == 50304  # fields without a role keep their defaults
    assert "n_embd=8 (default 768)" in construction.describe()


def test_a_namedtuple_model_args(tmp_path):
    module, _ = build(_target(tmp_path, CONFIGS, "LlamaStyle"), {"d_model": 8, "heads": 4, "kv_heads": 2})
    assert module.n_kv == 2 and module.wq.in_features == 8


def test_an_object_answering_by_role_names_what_it_could_not_answer(tmp_path):
    target = _target(tmp_path, CONFIGS, "Anything")
    with pytest.raises(UsageError) as info:
        build(target, {"d_model": 8, "heads": 2})
    message = str(info.value)
    assert "vocab_size" in message and "--init 'vocab_size=...'" in message and "\n" not in message
    module, _ = build(target, {"d_model": 8, "heads": 2, "dropout": 0.2}, init={"vocab_size": 11})
    assert (module.width, module.heads, module.rate, module.vocab) == (8, 2, 0.2, 11)


def test_transformers_llama_config_takes_kv_heads_and_head_size():
    pytest.importorskip("transformers")
    target = load_target("transformers.models.llama.modeling_llama:LlamaAttention")
    module, construction = build(target, {"d_model": 8, "heads": 4, "kv_heads": 2, "d_head": 2})
    assert (module.config.hidden_size, module.config.num_attention_heads, module.config.num_key_value_heads) == (8, 4, 2)
    assert module.k_proj.out_features == 4 and construction.arguments["layer_idx"] == 0


CONSTRAINED = """
    from torch import nn

    class Multiple8(nn.Module):
        def __init__(self, d_model, heads):
            super().__init__()
            if (d_model // heads) % 8:
                raise ValueError("head size must be a multiple of 8")

    class Even(nn.Module):
        def __init__(self, d_model, n_heads, n_kv_heads):
            super().__init__()
            if (d_model // n_heads) % 2:
                raise ValueError("rotary needs an even head size")
            if n_heads % n_kv_heads:
                raise ValueError("n_heads must be divisible by n_kv_heads")

    class Free(nn.Module):
        def __init__(self, d_model, heads):
            super().__init__()
"""


@pytest.mark.parametrize("name, multiple, kv", [("Multiple8", 8, False), ("Even", 2, True), ("Free", 1, False)])
def test_constructor_constraints_are_found_on_the_meta_device(tmp_path, name, multiple, kv):
    constraints = probe_constraints(_target(tmp_path, CONSTRAINED, name))
    assert (constraints.d_head_multiple, constraints.kv_heads_divide) == (multiple, kv)
    assert bool(constraints.notes) == (multiple > 1 or kv)
    if multiple == 8:
        assert "multiples of 8" in constraints.notes[0]


def test_every_unmapped_parameter_is_named_in_one_line(tmp_path):
    target = _target(tmp_path, "from torch import nn\nclass Odd(nn.Module):\n    def __init__(self, d_model, rank, alpha):\n        super().__init__()\n", "Odd")
    with pytest.raises(UsageError) as info:
        map_arguments(target, {"d_model": 8, "heads": 2}, keep_defaults=True)
    assert str(info.value).endswith("cannot map required arguments 'rank', 'alpha' of Odd; give them with --init 'rank=...,alpha=...'")
