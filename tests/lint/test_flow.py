"""SC136-SC139 in other projects' styles than their corpus files: where each rule must fire, and the correct
code it must leave alone."""

from __future__ import annotations

from .helpers import codes as all_codes

FLOW = ("SC136", "SC137", "SC138", "SC139", "SC140")


def codes(source: str) -> list[str]:
    """The findings of these rules (the snippets leave names undefined and scores unscaled for brevity)."""
    return [c for c in all_codes(source) if c in FLOW]

LLAMA = """
import torch
from torch import nn


class Attention(nn.Module):
    def forward(self, x, freqs_cis):
        b, n, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(b, n, self.n_heads, self.head_dim)
        xk = xk.view(b, n, self.n_heads, self.head_dim)
        xv = xv.view(b, n, self.n_heads, self.head_dim)
        {rotate}
        scores = torch.matmul(xq.transpose(1, 2), xk.transpose(1, 2).transpose(2, 3)) / self.head_dim ** 0.5
        probs = scores.softmax(dim=-1)
        return torch.matmul(probs, xv.transpose(1, 2))
"""


def test_sc136_values_rotated_in_llama_style_where_a_value_projection_makes_them():
    # a value projection's output handed to the rotary function and stored back
    assert codes(LLAMA.format(rotate="xq, xk, xv = apply_rotary_emb(xq, xk, xv, freqs_cis=freqs_cis)")) == ["SC136"]
    assert codes(LLAMA.format(rotate="xv = apply_rotary_emb(xv, freqs_cis)")) == ["SC136"]
    assert codes(LLAMA.format(rotate="xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)")) == []
    # one call per tensor, in one tuple
    rope = "xq, xk, xv = self.rope(xq, freqs_cis), self.rope(xk, freqs_cis), self.rope(xv, freqs_cis)"
    assert codes(LLAMA.format(rotate=rope)) == ["SC136"]
    assert codes(LLAMA.format(rotate="xq, xk = self.rope(xq, freqs_cis), self.rope(xk, freqs_cis)")) == []


EINSUM = """
import torch
from einops import rearrange


def attend(self, x, pos):
    q, k, v = self.to_qkv(x).chunk(3, dim=-1)
    q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), (q, k, v))
    {rotate}
    sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
    attn = sim.softmax(dim=-1)
    out = torch.einsum("b h i j, b h j d -> b h i d", attn, v)
    return rearrange(out, "b h n d -> b n (h d)")
"""


def test_sc136_values_rotated_through_a_map_in_einsum_style_where_the_softmax_weights_them():
    assert codes(EINSUM.format(rotate="q, k, v = map(lambda t: apply_rotary_pos_emb(pos, t), (q, k, v))")) \
        == ["SC136"]
    assert codes(EINSUM.format(rotate="v = rotate_every_two(v, pos)")) == ["SC136"]
    assert codes(EINSUM.format(rotate="q, k = map(lambda t: apply_rotary_pos_emb(pos, t), (q, k))")) == []
    # an option that rotates the values on purpose
    assert codes(EINSUM.format(rotate="if self.rotate_value:\n        v = apply_rotary_pos_emb(pos, v)")) == []


def test_sc136_values_that_only_give_the_tables_their_dtype_are_not_rotated():
    # transformers' Llama of 2023: the rotary module reads dtype and device from the values and returns cos, sin
    src = """
def forward(self, hidden_states, position_ids):
    query_states = self.q_proj(hidden_states)
    key_states = self.k_proj(hidden_states)
    value_states = self.v_proj(hidden_states)
    cos, sin = self.rotary_emb(value_states, seq_len=hidden_states.shape[1])
    query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin, position_ids)
    return query_states, key_states, value_states
"""
    assert codes(src) == []
    assert codes(src.replace("query_states, key_states = apply", "query_states, value_states = apply")
                 .replace("(query_states, key_states, cos", "(query_states, value_states, cos")) == ["SC136"]


MASK = """
import torch


def forward(self, x, mask=None):
    scores = x @ x.transpose(-2, -1)
    if mask is None:
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()
{inside}
{after}
    return scores.softmax(dim=-1) @ x
"""


def test_sc137_a_mask_parameter_used_only_where_the_default_replaced_it():
    fill = "scores = scores.masked_fill(~mask, float('-inf'))"
    assert codes(MASK.format(inside="        " + fill, after="")) == ["SC137"]
    assert codes(MASK.format(inside="", after="    " + fill)) == []
    # a test of a conjunction, and a mask the function refuses when it is missing
    both = MASK.replace("if mask is None:", "if self.causal and not exists(mask):")
    assert codes(both.format(inside="        " + fill, after="")) == ["SC137"]
    refused = MASK.replace("        mask = torch.ones",
                           "        raise ValueError('mask needed')\n        mask = torch.ones")
    assert codes(refused.format(inside="        " + fill, after="")) == []
    # the else of a test that the mask is given is where it is None
    inverted = MASK.replace("if mask is None:", "if mask is not None:\n        pass\n    else:")
    assert codes(inverted.format(inside="        " + fill, after="")) == ["SC137"]
    # the given mask read in the other branch
    other = MASK.format(inside="        " + fill, after="    else:\n        scores = scores + mask")
    assert codes(other) == []


def test_sc137_a_read_in_a_closure_or_a_later_statement_counts():
    src = """
def forward(self, x, mask=None):
    if mask is None:
        mask = self.default_mask(x)
        x = self.attend(x, mask)
    {later}
    return x
"""
    assert codes(src.format(later="pass")) == ["SC137"]
    assert codes(src.format(later="fill = lambda s: s.masked_fill(~mask, 0)")) == []
    assert codes(src.format(later="x = self.attend(x, mask) if self.again else x")) == []
    assert codes(src.format(later="with self.scope(mask):\n        pass")) == []


def test_sc137_a_cache_given_by_the_caller_read_only_where_it_is_none():
    src = """
def step(self, x, cache=None):
    if cache is None:
        cache = self.empty_cache(x)
        x = self.layer(x, cache=cache)
    return x
"""
    assert codes(src) == ["SC137"]
    assert codes(src.replace("        x = self.layer", "    x = self.layer")) == []


def test_sc138_a_flag_whose_branches_are_the_same():
    src = """
def forward(self, x):
    n = x.shape[1]
    if self.causal:
        bias = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float('-inf'))
    else:
        bias = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float('-inf'))
    return bias
"""
    assert codes(src) == ["SC138"]
    assert codes(src.replace("else:\n        bias = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool)"
                             ".triu(1), float('-inf'))", "else:\n        bias = torch.zeros(n, n)")) == []
    # nothing done in either branch, and an elif chain (another rule's business)
    assert codes("def f(x):\n    if x:\n        pass\n    else:\n        pass\n") == []
    assert codes("def f(x, y):\n    if x:\n        y = 1\n    elif x is None:\n        y = 1\n    return y\n") == []
    # a conditional expression
    choice = "def f(self, d):\n    self.scale = d ** -0.5 if self.use_mup else {other}\n"
    assert codes(choice.format(other="d ** -0.5")) == ["SC138"]
    assert codes(choice.format(other="d ** -1")) == []
    assert codes("def f(x, y):\n    return x if y else x\n") == []
    # a check of a type or of presence, whose branches became the same when the types did (transformers' GIT)
    legacy = ("def f(cache):\n"
              "    return cache.get_seq_length() if not isinstance(cache, Cache) else cache.get_seq_length()\n")
    assert codes(legacy) == []
    # a local value's truth (transformers' Kosmos-2 processor appends the same box either way)
    local = """
def boxes(pairs, phrase):
    out = []
    for pair in pairs:
        found = parse(pair)
        if found:
            out.append((int(found[0]), int(found[1])))
        else:
            out.append((int(found[0]), int(found[1])))
    return out
"""
    assert codes(local) == []
    assert codes(local.replace("if found:", "if phrase:")) == ["SC138"]  # a flag the caller passes
    # the last two arms of an elif chain spelled out one case each, and a constant given in both branches
    chain = """
def pick(kind, x):
    if kind in ("str", "list"):
        out = tokens(x)
    elif kind == "embeds":
        out = embed(x)
    else:
        out = embed(x)
    if x is None:
        mode = "tokens"
    else:
        mode = "tokens"
    return out, mode
"""
    assert codes(chain) == []


UNFOLD = """
import torch
from torch import nn


class LocalAttention(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.unfold = nn.Unfold(kernel_size=3, padding=1)

    def forward(self, q, k):
        b, c, h, w = k.shape
        windows = self.unfold(k)
        windows = windows.view({split})
        return torch.einsum("bcl,bcjl->bjl", q.flatten(2), windows).softmax(dim=1)
"""


def test_sc139_an_unfold_module_split_by_view_kernel_first():
    assert codes(UNFOLD.format(split="b, 9, c, h * w")) == ["SC139"]
    assert codes(UNFOLD.format(split="b, c, 9, h * w")) == []
    assert codes(UNFOLD.format(split="b, c, 3 * 3, -1")) == []
    # Tensor.unfold keeps its windows on a new last axis: not the same layout
    src = "def f(x, k):\n    u = x.unfold(2, k, 1)\n    return u.view(x.shape[0], k * k, -1, 4)\n"
    assert codes(src) == []


NANOGPT = """
import torch


def attend(self, q, k, v):
    att = (q @ k.transpose(-2, -1)) * self.scale
    {lengths}
    causal = torch.tril(torch.ones({rows}, T, dtype=torch.bool, device=att.device){offset})
    att = att.masked_fill(~causal, float("-inf"))
    return att.softmax(dim=-1) @ v
"""


def test_sc140_a_causal_mask_built_square_from_one_length_of_the_scores_in_nanogpt_style():
    assert codes(NANOGPT.format(lengths="T = att.size(-1)", rows="T", offset="")) == ["SC140"]
    assert codes(NANOGPT.format(lengths="S, T = att.shape[-2:]", rows="S", offset=", diagonal=T - S")) == []
    # the query length alone: the mask has seq_q columns where the scores have seq_k
    assert codes(NANOGPT.format(lengths="T = att.size(-2)", rows="T", offset="")) == ["SC140"]
    # a bias of one axis (over the keys) broadcasts as it should
    src = "def f(self, att):\n    n = att.shape[-1]\n    bias = self.key_bias(torch.arange(n))\n    return att + bias\n"
    assert codes(src) == []
    # the length of another tensor: the queries' own input
    src = ("def f(self, x, att):\n    n = x.shape[-1]\n    mask = torch.ones(n, n).triu(1).bool()\n"
           "    return att.masked_fill(mask, float('-inf'))\n")
    assert codes(src) == []


def test_sc140_a_square_block_of_a_causal_buffer_cut_by_one_length_of_the_scores():
    # GPT-2 of 2019 had the block [ns - nd:ns, :ns]; cut [:n, :n] by the key length it is wrong with a cache
    src = """
def _attn(self, q, k, v):
    w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
    {lengths}
    b = self.bias[:, :, {rows}, :ns]
    w = w * b - 1e4 * (1 - b)
    return torch.matmul(w.softmax(dim=-1), v)
"""
    assert codes(src.format(lengths="ns = w.size(-1)", rows=":ns")) == ["SC140"]
    assert codes(src.format(lengths="nd, ns = w.size(-2), w.size(-1)", rows="ns - nd:ns")) == []


def test_sc140_a_square_bias_combined_with_a_padding_mask_is_not_applied_to_scores():
    # OLMo: the causal bias cut [:n, :n] by the padding mask's length, added to that (batch, 1, 1, n) mask, and
    # sliced for the queries later, in the block
    src = """
def forward(self, x, attention_mask=None):
    mask_len = attention_mask.shape[-1]
    attention_bias = self.causal_bias[:, :, :mask_len, :mask_len].to(dtype=torch.float)
    attention_bias = attention_bias + attention_mask
    return self.blocks(x, attention_bias)
"""
    assert codes(src) == []
    # the same sum returned by a bias module given the scores
    assert codes("def forward(self, scores):\n    n = scores.size(-1)\n    a = torch.ones(n, n).tril()\n"
                 "    return scores + a\n") == ["SC140"]
