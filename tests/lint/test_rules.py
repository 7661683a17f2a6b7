"""Each rule on small snippets: where it fires, and where tracking loses the thread and stays silent."""

from __future__ import annotations

import textwrap

from shapecheck.lint import lint_source
from shapecheck.lint.config import LintConfig
from shapecheck.lint import messages as m

from .helpers import assert_lint, codes

SCORES = """
import math, torch
def attn(q, k, v):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    {line}
"""


def scores_then(line: str) -> str:
    return SCORES.format(line=line)


def test_softmax_over_the_keys_is_fine_every_spelling():
    for line in ("p = s.softmax(-1)", "p = torch.softmax(s, dim=-1)", "p = torch.nn.functional.softmax(s, -1)",
                 "p = torch.nn.Softmax(dim=-1)(s)", "p = s.log_softmax(dim=-1)"):
        assert codes(scores_then(line)) == [], line


def test_softmax_over_another_axis_of_unknown_rank_scores():
    assert_lint(scores_then("p = s.softmax(dim=-2)"), m.SoftmaxAxis)
    assert_lint(scores_then("p = torch.nn.Softmax(dim=-3)(s)"), m.SoftmaxAxis)


def test_positive_dim_on_unknown_rank_is_not_guessed():
    assert codes(scores_then("p = s.softmax(dim=1)")) == []  # key axis for 2-D scores


def test_softmax_of_something_that_is_not_scores_is_not_checked():
    assert codes("import torch\ndef f(x):\n    return torch.softmax(x, dim=1)\n") == []


def test_implicit_softmax_dim_on_4d_scores_is_the_heads_axis():
    src = """
    import math, torch.nn.functional as F
    def f(x, n_head):
        B, T, C = x.shape
        q = x.view(B, T, n_head, C // n_head).transpose(1, 2)
        att = q @ q.transpose(-2, -1) / math.sqrt(q.size(-1))
        return F.softmax(att)
    """
    assert_lint(src, m.SoftmaxAxis)


def test_scaling_found_through_locals_and_self_attributes():
    assert codes(scores_then("p = s.softmax(-1)")) == []
    unscaled = "import torch\ndef f(q, k):\n    return torch.softmax(q @ k.transpose(-2, -1), dim=-1)\n"
    assert_lint(unscaled, m.UnscaledScores)
    by_query = "import torch\ndef f(q, k, scaling):\n    q = q * scaling\n    return torch.softmax(q @ k.mT, dim=-1)\n"
    assert codes(by_query) == []
    by_width = "import torch\ndef f(q, k, d_model):\n    s = q @ k.mT\n    s = s / d_model ** 0.5\n    return s.softmax(-1)\n"
    assert_lint(by_width, m.WidthScaledScores)
    by_head = "import torch\ndef f(q, k, d_model, h):\n    s = q @ k.mT\n    s = s / (d_model // h) ** 0.5\n    return s.softmax(-1)\n"
    assert codes(by_head) == []


def test_scaling_on_one_path_only_is_not_called_unscaled():
    src = """
    import torch
    def f(q, k, scale_attn):
        w = torch.matmul(q, k.transpose(-1, -2))
        if scale_attn:
            w = w / 8.0
        return torch.softmax(w, dim=-1)
    """
    assert codes(src) == []


def test_merge_of_adjacent_heads_and_flatten_are_fine():
    src = """
    def f(x, n_head):
        B, T, C = x.shape
        y = x.view(B, T, n_head, C // n_head).transpose(1, 2)
        a = y.transpose(1, 2).reshape(B, T, C)
        b = y.reshape(B, n_head * T * (C // n_head))
        return a, b
    """
    assert codes(src) == []


def test_in_place_masked_fill_is_not_discarded():
    assert codes(scores_then("s.masked_fill_(q.new_ones(1).bool(), -1e9)")) == []
    assert_lint(scores_then("s.masked_fill(q.new_ones(1).bool(), -1e9)"), m.MaskedFillDiscarded)


def test_masked_fill_back_to_the_same_name_in_a_branch_is_fine():
    src = """
    import math, torch
    def f(q, k, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        return torch.softmax(scores, dim=-1)
    """
    assert codes(src) == []


def test_mask_conventions_read_the_right_way_round():
    for mask in ("attention_mask == 0", "~attention_mask.bool()", "attention_mask.eq(0)", "key_padding_mask",
                 "key_padding_mask[:, None, None, :]"):
        src = f"def f(scores, attention_mask, key_padding_mask):\n    return scores.masked_fill({mask}, -1e9)\n"
        assert codes(src) == [], mask
    for mask in ("attention_mask.bool()", "attention_mask == 1", "~key_padding_mask", "key_padding_mask == 0"):
        src = f"def f(scores, attention_mask, key_padding_mask):\n    return scores.masked_fill({mask}, -1e9)\n"
        assert codes(src) == ["SC174"], mask  # the convention is the public name's alone: the opt-in rule


def torch_codes(src: str) -> list[str]:
    return codes("import torch\n\n\n" + src)


def test_the_default_a_file_builds_for_a_mask_decides_its_convention():
    # llm-foundry's key_padding_mask is True = keep: its own default is all True; the public name says otherwise
    fill = "def g(scores, key_padding_mask):\n    return scores.masked_fill({mask}, -1e9)\n"
    default = "def f(k, key_padding_mask=None):\n    if key_padding_mask is None:\n" \
              "        key_padding_mask = {made}\n    return key_padding_mask\n\n\n"
    keep = default.format(made="torch.ones_like(k[:, :, 0], dtype=torch.bool)")
    assert torch_codes(keep + fill.format(mask="~key_padding_mask")) == []
    assert torch_codes(keep + fill.format(mask="key_padding_mask")) == ["SC109"]
    masked = default.format(made="torch.zeros(k.shape[:2], dtype=torch.bool)")
    assert torch_codes(masked + fill.format(mask="~key_padding_mask")) == ["SC109"]
    # defaults that disagree decide nothing: the public name's convention stands, reported by the opt-in rule
    both = keep + default.replace("def f(", "def h(").format(made="torch.full(k.shape[:2], False)")
    assert torch_codes(both + fill.format(mask="~key_padding_mask")) == ["SC174"]
    # a mask allocated and then written is a builder, not a default: the public name's convention stands
    built = "def f(n):\n    key_padding_mask = torch.ones(n, n)\n    return key_padding_mask\n\n\n"
    assert torch_codes(built + fill.format(mask="~key_padding_mask")) == ["SC174"]
    # in the function that builds the default, the name holds the caller's mask or the default: the same convention
    inside = "def f(scores, k, key_padding_mask=None):\n    if key_padding_mask is None:\n" \
             "        key_padding_mask = torch.ones_like(k[:, :, 0], dtype=torch.bool)\n" \
             "    return scores.masked_fill({mask}, -1e9)\n"
    assert torch_codes(inside.format(mask="key_padding_mask")) == ["SC109"]
    assert torch_codes(inside.format(mask="~key_padding_mask")) == []


def test_a_reassigned_mask_name_is_not_trusted():
    src = "def f(scores, attention_mask):\n    attention_mask = attention_mask == 0\n    return scores.masked_fill(attention_mask, -1e9)\n"
    assert codes(src) == []


def test_dropout_rule_only_in_module_methods():
    module = """
    import torch.nn.functional as F
    from torch import nn
    class Block(nn.Module):
        def forward(self, x):
            return F.dropout(x, 0.1){extra}
    """
    assert_lint(module.format(extra=""), m.DropoutAlwaysOn)
    assert codes(module.format(extra=" + F.dropout(x, 0.1, training=self.training)")) == ["SC110"]
    assert codes("import torch.nn.functional as F\ndef f(x):\n    return F.dropout(x, 0.1)\n") == []


def test_key_length_rule_needs_a_key_length_in_scope():
    self_attention = """
    def f(x, k_proj, heads):
        tgt_len, bsz, embed_dim = x.shape
        k = k_proj(x).view(tgt_len, bsz * heads, embed_dim // heads)
        return k
    """
    assert codes(self_attention) == []


def test_merging_the_output_of_probs_at_v_is_not_a_key_reshape():
    src = """
    import math
    def f(query, key, value, wq, wk, wv, heads):
        batch, seq_q, seq_k = query.size(0), query.size(1), key.size(1)
        q = (query @ wq).view(batch, seq_q, heads, -1).transpose(1, 2)
        k = (key @ wk).view(batch, seq_k, heads, -1).transpose(1, 2)
        v = (value @ wv).view(batch, seq_k, heads, -1).transpose(1, 2)
        probs = (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).softmax(dim=-1)
        return (probs @ v).transpose(1, 2).reshape(batch, seq_q, -1)
    """
    assert codes(src) == []
    assert codes(src.replace("(value @ wv).view(batch, seq_k", "(value @ wv).view(batch, seq_q")) == ["SC113"]


def test_unknown_layouts_stay_silent():
    src = """
    def f(x, a, b, c, d):
        y = x.view(a, b, c, d).permute(0, 2, 1, 3)
        return y.reshape(a, c, b * d), y.contiguous().view(-1)
    """
    assert codes(src) == []


def test_noqa_suppresses_named_codes_only():
    line = "p = torch.softmax(q @ k.transpose(-2, -1), dim=-1)"
    src = "import torch\ndef f(q, k):\n    " + line + "  # noqa: {}\n"
    assert codes(src.format("SC102")) == []
    assert codes(src.format("SC101")) == ["SC102"]
    assert codes("import torch\ndef f(q, k):\n    " + line + "  # noqa\n") == []


def test_dropout_imported_from_torch_nn_functional_is_checked_too():
    module = """
    from torch import nn
    from torch.nn.functional import dropout{alias}
    class Block(nn.Module):
        def forward(self, x):
            return {call}
    """
    assert_lint(module.format(alias="", call="dropout(x, 0.1)"), m.DropoutAlwaysOn)
    assert_lint(module.format(alias=" as drop", call="drop(x, p=0.1)"), m.DropoutAlwaysOn)
    assert codes(module.format(alias="", call="dropout(x, 0.1, training=self.training)")) == []
    shadowed = "from torch.nn.functional import dropout\nfrom torch import nn\nclass B(nn.Module):\n    def forward(self, x, dropout):\n        return dropout(x)\n"
    assert codes(shadowed) == []  # a parameter named dropout is not the imported function


def test_a_linear_attention_normaliser_divides_the_output():
    src = """
import torch
def f(q, k, v):
    D = {made}
    context = torch.einsum("bnd,bne->bde", k, v)
    return {out}
"""
    made = 'torch.einsum("bnd,bd->bn", q, k.sum(dim=1))'
    out = 'torch.einsum("bnd,bde,bn->bne", q, context, {d})'
    assert torch_codes(src.format(made=made, out=out.format(d="D"))) == ["SC134"]
    multiplied = 'torch.einsum("bnd,bde->bne", q, context) * D.unsqueeze(-1)'
    assert torch_codes(src.format(made=made, out=multiplied)) == ["SC134"]
    for inverse in ("1. / D", "D.reciprocal()", "torch.reciprocal(D)", "D ** -1", "1 / D.clamp(min=1e-6)"):
        assert torch_codes(src.format(made=made, out=out.format(d=inverse))) == [], inverse
    assert torch_codes(src.format(made=made, out='torch.einsum("bnd,bde->bne", q, context) / D.unsqueeze(-1)')) == []
    # a sum over the features, or a mean, is no sum over the positions
    for other in ('torch.einsum("bnd,bd->bn", q, k.sum(dim=-1))', 'torch.einsum("bnd,bd->bn", q, k.mean(dim=1))'):
        assert torch_codes(src.format(made=other, out=out.format(d="D"))) == [], other


def test_one_mask_for_two_mask_arguments_while_the_own_one_is_unread():
    src = """
def forward(self, x, mask=None, key_padding_mask=None, cross_mask=None):
    return self.layer(x, attn_mask=mask, {rest})
"""
    assert torch_codes(src.format(rest="key_padding_mask=mask")) == ["SC135"]
    assert torch_codes(src.format(rest="key_padding_mask=key_padding_mask")) == []
    # a layer that passes the cross-attention mask under the name of the self-attention one it does not use
    cross = src.format(rest="attention_mask=cross_mask").replace("x, mask=None", "x, attention_mask=None, mask=None")
    assert torch_codes(cross) == []
    # the own parameter is read (the value was built from it), a constant, a flag
    assert torch_codes(src.format(rest="key_padding_mask=mask") + "    print(key_padding_mask)\n") == []
    assert torch_codes(src.format(rest="key_padding_mask=None")) == []


def test_a_name_reshaped_twice_only_where_both_reshapes_run_on_the_value_the_first_made():
    src = """
from einops import rearrange
def attend(dots, mask=None, flag=False):
    if mask is not None:
        mask = rearrange(mask, 'b j -> b 1 1 j')
    {middle}
    if mask is not None:
        mask = rearrange(mask, 'b j -> b 1 1 j')
    return dots.masked_fill(~mask, -1e4)
"""
    assert torch_codes(src.format(middle="pass")) == ["SC153"]
    assert torch_codes(src.format(middle="mask = mask.flatten(1)")) == []  # a new value in between
    exclusive = src.replace("    {middle}\n    if mask is not None:", "    else:")
    exclusive = exclusive.replace("    if mask is not None:\n", "    if flag:\n", 1)
    assert "SC153" not in torch_codes(exclusive)  # the two reshapes on different branches (the same arms: SC138)
    first_under_a_flag = src.format(middle="pass").replace("    if mask is not None:\n", "    if flag:\n", 1)
    assert torch_codes(first_under_a_flag) == []  # which paths run together, nobody knows
    second = "    if mask is not None:\n        mask = rearrange(mask, 'b j -> b 1 1 j')\n    return"
    rank_tested = src.format(middle="pass").replace(second, second.replace("mask is not None", "mask.ndim == 2"))
    assert torch_codes(rank_tested) == []


def test_keys_expanded_to_the_queries_shape_only_when_attended_against_them():
    src = """
import torch.nn.functional as F
def attend(q, k, v):
    k = k.expand_as(q)
    return {use}
"""
    assert torch_codes(src.format(use="F.scaled_dot_product_attention(q, k, v)")) == ["SC154"]
    assert torch_codes(src.format(use="(q @ k.transpose(-2, -1) * 0.125).softmax(-1) @ v")) == ["SC154"]
    assert torch_codes(src.format(use="q + k")) == []  # an elementwise use: no key length is involved


def test_a_cache_default_is_reported_only_when_it_computes_something():
    src = """
import torch
from torch import nn
class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.to_kv = nn.Linear(d, 2 * d)
    def forward(self, x, cache):
        kv = cache.get("kv", {default})
        return kv
"""
    assert torch_codes(src.format(default="self.to_kv(x)")) == ["SC151"]
    assert torch_codes(src.format(default="torch.zeros(1, 2)")) == []  # an allocation: cheap, nothing cached
    assert torch_codes(src.format(default="None")) == []


def test_rotary_positions_from_zero_only_where_a_cache_may_be_in_use():
    src = """
def forward(self, x, past_kv=None):
    B, T, C = x.size()
    {line}
    return x * cos
"""
    assert torch_codes(src.format(line="cos = self.cos[:T]")) == ["SC155"]
    assert torch_codes(src.format(line="if past_kv is None:\n        cos = self.cos[:T]")) == []  # the prefill
    grown = "L = T\n    if past_kv is not None:\n        L += past_kv[0].size(2)\n    cos = self.cos[:L][-T:]"
    assert torch_codes(src.format(line=grown)) == []  # a length that counts the cache
    assert torch_codes(src.format(line="cos = self.cos[:T]").replace(", past_kv=None", "")) == []  # no cache at all


LAYER_GIVEN_A_PREPARED_MASK = """
def prepare_mask(padding, n):
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return future[None, None] | ~padding.bool()[:, None, None, :]  # True where a query may not look


def layer(q, k, v, attention_mask):
    bias = (attention_mask * 1.0).masked_fill(attention_mask, -1e9)
    return ((q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 + bias).softmax(dim=-1)) @ v
"""


def test_a_convention_read_from_the_name_alone_is_opt_in():
    """Falcon's layers take the model's prepared mask (True = masked) as ``attention_mask``: the Hugging Face name
    says 1 = attend, but nothing in the code does, so only the opt-in SC174 reports the fill."""
    source = "import torch\n\n\n" + LAYER_GIVEN_A_PREPARED_MASK
    assert [f.code for f in lint_source(source)] == []
    assert torch_codes(LAYER_GIVEN_A_PREPARED_MASK) == ["SC174"]
    documented = LAYER_GIVEN_A_PREPARED_MASK.replace(
        "attention_mask):\n", 'attention_mask):\n    """attention_mask: True where a query may attend."""\n', 1)
    assert [f.code for f in lint_source("import torch\n\n\n" + documented)] == ["SC109"]  # a docstring says so


def test_softmax_axis_message_names_where_the_keys_are():
    """Scores [n, l, heads] (einsum "nhm,lhm->nlh"): the fix is dim=-2, not the usual dim=-1."""
    from .helpers import CORPUS, EVERY_RULE
    (finding,) = [f for f in lint_source((CORPUS / "buggy" / "sc101_keys_in_the_middle.py").read_text(), "x.py",
                                         EVERY_RULE) if f.code == "SC101"]
    assert "the key axis is dim=-2" in finding.message and "softmax over dim=-2" in finding.hint


def test_a_mask_built_from_a_name_alone_keeps_the_guess_opt_in():
    """Longformer's ``attention_mask`` holds -10000, 0 and +10000: ``(attention_mask != 0)`` marks what leaves the
    window, and filling there is right. A mask built from a parameter whose convention only its name suggests
    carries that guess along, so only the opt-in SC174 reports the fill, as for the name itself."""
    source = textwrap.dedent("""
        import torch, torch.nn.functional as F

        def window_scores(scores, attention_mask):
            remove_from_windowed_attention_mask = (attention_mask != 0)[:, None, :, None]
            float_mask = remove_from_windowed_attention_mask.type_as(scores).masked_fill(
                remove_from_windowed_attention_mask, -10000.0)
            scores += float_mask
            return F.softmax(scores, dim=-1)
        """)
    assert [f.code for f in lint_source(source)] == []
    assert codes(source) == ["SC174"]
    docstring = '    """attention_mask: True where a query may attend."""\n'
    documented = source.replace("attention_mask):\n", "attention_mask):\n" + docstring, 1)
    assert [f.code for f in lint_source(documented)] == ["SC109"]  # a docstring says so: the default rule


def test_the_softmax_axis_rule_is_opt_in():
    """SC101 was right at 5 of 16 findings on code nobody tuned it to (none of 3 on held-out halves): the default
    rules leave a softmax over dim=1 of 4-D scores alone, and ``extend_select`` names it."""
    from .helpers import CORPUS
    source = (CORPUS / "buggy" / "sc101_keys_in_the_middle.py").read_text()
    assert "SC101" not in {f.code for f in lint_source(source, "x.py")}
    assert "SC101" in {f.code for f in lint_source(source, "x.py", LintConfig(extend_select=("SC101",)))}
