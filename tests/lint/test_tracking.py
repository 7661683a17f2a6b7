"""Tracking by provenance on small snippets: each operation keeps what the rules need, and silence where unsure."""

from __future__ import annotations

import textwrap

import pytest

from shapecheck.lint import lint_source
from shapecheck.lint import messages as m

from .helpers import EVERY_RULE, assert_lint, codes

HEADER = "import math, torch\nimport torch.nn.functional as F\nfrom torch import nn\n"


def test_sizes_are_read_from_where_they_are_bound_not_their_names():
    # 'e' and 'count' are no axis names; splitting e into (self.h, e // self.h) makes them heads and d_head
    src = HEADER + """
class A(nn.Module):
    def __init__(self, width, count):
        super().__init__()
        self.h = count
        self.proj = nn.Linear(width, width)
    def forward(self, x):
        y = self.proj(x)
        b, t, e = y.shape
        per_head = e // self.h
        return y.view(b, self.h, t, per_head)
"""
    assert_lint(src, m.SplitWithoutTranspose)


def test_the_minus_one_of_a_merge_is_resolved_from_the_other_sizes():
    src = HEADER + """
def f(x, n_head):
    B, T, C = x.shape
    q = x.view(B, T, n_head, C // n_head).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, q, q)
    return y.reshape(B, T, -1)
"""
    assert_lint(src, m.MergeWithoutTranspose)
    assert codes(src.replace("y.reshape(B, T, -1)", "y.transpose(1, 2).reshape(B, T, -1)")) == []


def test_einsum_scores_know_their_key_axis():
    src = HEADER + """
def f(x, heads):
    B, T, C = x.shape
    q = x.view(B, T, heads, C // heads)
    s = torch.einsum("bqhd,bkhd->bhqk", q, q) / math.sqrt(C // heads)
    return s.softmax(dim={dim})
"""
    assert codes(src.format(dim=-1)) == []
    assert_lint(src.format(dim=2), m.SoftmaxAxis)


def test_unbind_of_a_packed_qkv_keeps_the_head_layout():
    src = HEADER + """
def f(x, qkv, heads):
    B, N, C = x.shape
    q, k, v = qkv(x).reshape(B, N, 3, heads, C // heads).permute(2, 0, 3, 1, 4).unbind(0)
    y = F.scaled_dot_product_attention(q, k, v)
    return y.reshape(B, N, C)
"""
    assert_lint(src, m.MergeWithoutTranspose)


@pytest.mark.parametrize("merge, expected", [
    ("(attn @ v).reshape(B, N, C)", [m.MergeWithoutTranspose]),
    ("(attn @ v).transpose(1, 2).reshape(B, N, C)", []),
])
def test_unpacking_a_reshaped_qkv_iterates_its_first_axis(merge, expected):
    # ``q, k, v = t`` is t[0], t[1], t[2]: each keeps the permuted layout of the rest
    src = HEADER + f"""
def f(x, qkv, heads, scale):
    B, N, C = x.shape
    q, k, v = qkv(x).reshape(B, N, 3, heads, C // heads).permute(2, 0, 3, 1, 4)
    attn = (q @ k.transpose(-2, -1) * scale).softmax(dim=-1)
    return {merge}
"""
    assert_lint(src, *expected)


def test_unpacking_a_call_result_is_not_read_as_a_tensor():
    # a module may return a tuple: only a tensor this function reshaped itself is iterated along its first axis
    src = HEADER + """
def f(x, attn, heads):
    B, N, C = x.shape
    out, weights = attn(x.view(B, N, heads, C // heads).transpose(1, 2))
    return out.reshape(B, N, C)
"""
    assert_lint(src)


def test_a_followed_helper_returns_the_callers_layout():
    src = HEADER + """
def split_heads(t, heads):
    b, n, w = t.shape
    return t.view(b, n, heads, w // heads).transpose(1, 2)

def f(x, heads):
    B, T, C = x.shape
    q = split_heads(x, heads)
    y = q @ q.transpose(-2, -1) / math.sqrt(C // heads)
    return (y.softmax(dim=-1) @ q).reshape(B, T, C)
"""
    assert_lint(src, m.MergeWithoutTranspose)


def test_matching_code_that_normalises_both_axes_on_purpose_is_silent():
    src = HEADER + """
def f(a, b):
    sim = a @ b.transpose(-1, -2) / 0.1
    return F.softmax(sim, 1) * F.softmax(sim, 2)
"""
    assert codes(src) == []


def test_a_mask_passed_under_another_value_is_not_judged_by_its_name():
    src = """
def attend(scores, attention_mask):
    return scores.masked_fill(attention_mask, -1e9)

def caller(scores, causal, attention_mask):
    return attend(scores, attention_mask=causal)
"""
    assert codes(src) == []
    assert codes(src.replace("attention_mask=causal", "attention_mask=attention_mask")) == ["SC174"]  # by name


def test_a_layer_made_in_forward_and_kept_on_self_is_lazy_set_up_not_a_bug():
    src = HEADER + """
class A(nn.Module):
    def forward(self, x):
        if not hasattr(self, "proj"):
            self.proj = nn.Linear(4, 4)
        layer = nn.Linear(4, 4)
        self.extra = layer
        return self.proj(x)
"""
    assert codes(src) == []


def test_sdpa_from_an_unrelated_function_of_the_same_name_is_not_checked():
    src = """
from my_kernels import scaled_dot_product_attention
from torch import nn
class A(nn.Module):
    def forward(self, q, k, v):
        return scaled_dot_product_attention(q, k, v, self.p, self.p)
"""
    assert codes(src) == []


EINOPS = HEADER + """from einops import rearrange

class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.norm = nn.LayerNorm(dim // heads)

    def forward(self, x):
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), self.to_qkv(x).chunk(3, dim=-1))
        {line}
        return torch.matmul(q, k.transpose(-1, -2)).softmax(dim=-1)
"""


def test_map_of_a_lambda_over_qkv_keeps_the_pieces_unscaled():
    assert_lint(EINOPS.format(line="pass"), m.UnscaledScores)


def test_unit_length_queries_and_keys_need_a_temperature_and_a_norm_that_rescales_sets_its_own():
    # cosine similarities lie in [-1, 1]: 1/sqrt(d_head) is not what they miss, a temperature is
    assert_lint(EINOPS.format(line="q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)"), m.UntemperedCosineScores)
    tempered = "q, k = F.normalize(q, dim=-1) * self.temperature, F.normalize(k, dim=-1)"
    assert codes(EINOPS.format(line=tempered)) == []
    # along another axis the vectors are not the ones multiplied: nothing is known of their length
    assert codes(EINOPS.format(line="q, k = F.normalize(q, dim=2), F.normalize(k, dim=2)")) == []
    unit_norm = EINOPS + """
class L2Norm(nn.Module):
    def forward(self, x):
        return F.normalize(x, dim=-1) * x.shape[-1] ** 0.5
"""
    assert codes(unit_norm.replace("nn.LayerNorm(dim // heads)", "L2Norm()").format(
        line="q, k = self.norm(q), self.norm(k)")) == []


def test_a_layer_norm_of_queries_and_keys_still_needs_the_scaling():
    # LayerNorm/RMSNorm over d_head keeps each vector's length near sqrt(d_head): q·k grows with d_head as before
    assert_lint(EINOPS.format(line="q, k = self.norm(q), self.norm(k)"), m.UnscaledScores)


EAGER = HEADER + """
def eager_attention_forward(module, query, key, value, scaling):
    weights = torch.matmul(query, key.transpose(-1, -2)) * scaling
    weights = F.softmax(weights, dim=1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(weights, value).transpose(1, 2).contiguous()
"""


def test_an_eager_attention_function_called_from_nowhere_reads_its_query_as_4d():
    # q @ k.transpose(-1, -2) and a swap of heads and positions: the query is (batch, heads, seq, d_head)
    assert_lint(EAGER, m.SoftmaxAxis)
    assert codes(EAGER.replace("dim=1", "dim=-1")) == []
    assert codes(EAGER.replace(".transpose(1, 2)", "")) == []  # no evidence of heads: silent


def test_the_attention_interface_is_followed_to_the_files_function_with_the_callers_axes():
    src = EAGER.replace(".transpose(-1, -2)) * scaling", ".transpose(-1, -2))").replace("dim=1", "dim=-1") + """
class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        attention_interface = eager_attention_forward
        y = attention_interface(self, q, k, v, scaling=1.0)
        return y.reshape(B, T, C)
"""
    assert_lint(src, m.UnscaledScores)  # the caller's q and k carry no scaling, and neither does the function


def test_the_minus_one_after_the_heads_of_a_split_last_axis_is_the_head_size():
    # timm's qkv.reshape(B, N, 3, self.num_heads, -1) of an F.linear output whose width nobody named
    src = HEADER + """
class Attention(nn.Module):
    def __init__(self, num_heads):
        super().__init__()
        self.num_heads = num_heads
    def forward(self, x, weight):
        B, N, C = x.shape
        qkv = F.linear(x, weight).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        y = F.scaled_dot_product_attention(q, k, v)
        return y.reshape(B, N, C)
"""
    assert_lint(src, m.MergeWithoutTranspose)
    assert codes(src.replace("y.reshape(B, N, C)", "y.transpose(1, 2).reshape(B, N, C)")) == []


def test_a_scale_built_from_heads_times_head_size_is_the_width():
    src = HEADER + """
class SelfAttention(nn.Module):
    def __init__(self, hidden_size, heads):
        super().__init__()
        self.heads = heads
        self.head_size = hidden_size // heads
        self.all_size = self.heads * self.head_size
        self.query = nn.Linear(hidden_size, self.all_size)
    def forward(self, x):
        B, T, C = x.shape
        q = self.query(x).view(B, T, self.heads, self.head_size).transpose(1, 2)
        s = q @ q.transpose(-1, -2) / self.all_size ** 0.5
        return s.softmax(dim=-1) @ q
"""
    assert_lint(src, m.WidthScaledScores)
    assert codes(src.replace("self.all_size ** 0.5", "self.head_size ** 0.5")) == []


def test_soft_capping_and_sink_columns_keep_the_scores():
    # tanh soft-capping (gemma-style) and a column of attention sinks joined on the key axis are still the scores
    src = HEADER + """
def attend(query, key, value, sinks, scaling, softcap):
    s = torch.matmul(query, key.transpose(2, 3)) * scaling
    s = torch.tanh(s / softcap) * softcap
    s = torch.cat([s, sinks], dim=-1)
    p = F.softmax(s, dim={dim})[..., :-1]
    return torch.matmul(p, value).transpose(1, 2)
"""
    assert codes(src.format(dim=-1)) == []
    assert_lint(src.format(dim=1), m.SoftmaxAxis)


def test_baddbmm_makes_three_dimensional_scores_scaled_by_alpha():
    src = HEADER + """
def scores(query, key, bias, scale):
    s = torch.baddbmm(bias, query, key.transpose(-1, -2), beta=1, alpha=scale)
    return s.softmax(dim={dim})
"""
    assert codes(src.format(dim=-1)) == []
    assert_lint(src.format(dim=1), m.SoftmaxAxis)
    assert_lint(src.format(dim=-1).replace(", alpha=scale", ""), m.UnscaledScores)


def test_a_call_that_replaces_the_scores_keeps_them():
    # ``attn = self.rel_pos(attn, ...)``: a module nobody models, given the scores and assigned back to them
    src = HEADER + """
class Attention(nn.Module):
    def __init__(self, dim, num_heads, rel_pos_cls):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.rel_pos = rel_pos_cls(num_heads=num_heads) if rel_pos_cls else None
    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        if self.rel_pos is not None:
            attn = self.rel_pos(attn)
        attn = attn.softmax(dim={dim})
        return (attn @ v).transpose(1, 2).reshape(B, N, C)
"""
    assert codes(src.format(dim=-1)) == []
    assert_lint(src.format(dim=1), m.SoftmaxAxis)


def test_paths_of_different_rank_bound_the_rank_from_below():
    src = HEADER + """
def attend(x, windows, scale, b, t, w, h, d):
    if windows:
        q = k = x.reshape(b, w, h, t, d)
    else:
        q = k = x.reshape(b, h, t, d)
    s = (q * scale) @ k.transpose(-1, -2)
    return s.softmax(dim={dim})
"""
    assert codes(src.format(dim=-1)) == []
    assert_lint(src.format(dim=1), m.SoftmaxAxis)


def test_transposed_scores_are_the_other_direction_of_bidirectional_attention():
    src = HEADER + """
def both_ways(vision, text, scale):
    s = torch.bmm(vision, text.transpose(1, 2)) * scale
    s = torch.clamp(s, min=-50000, max=50000)
    text_probs = s.transpose(1, 2).softmax(dim=-1)
    vision_probs = s.softmax(dim=-1)
    return torch.bmm(vision_probs, text), torch.bmm(text_probs, vision)
"""
    assert codes(src) == []


def test_scores_viewed_with_their_last_two_axes_kept_stay_scores():
    # Swin's shifted windows: the window count is split off the leading axis, (N, N) stay last
    src = HEADER + """
class WindowAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
    def forward(self, x, mask):
        B_, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B_, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        if mask is not None:
            num_win = mask.shape[0]
            attn = attn.view(-1, num_win, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, N, N)
        attn = attn.softmax(dim={dim})
        return (attn @ v).transpose(1, 2).reshape(B_, N, -1)
"""
    assert codes(src.format(dim=-1)) == []
    assert_lint(src.format(dim=1), m.SoftmaxAxis)
    assert_lint(src.format(dim=-1).replace("(q * self.scale)", "q"), m.UnscaledScores)


def test_a_tuple_with_spread_chunks_gives_one_piece_per_name():
    src = HEADER + """from einops import rearrange

class LocalAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Conv2d(dim, dim, 1)
        self.to_kv = nn.Conv2d(dim, dim * 2, 1)
    def forward(self, fmap):
        q, k, v = (self.to_q(fmap), *self.to_kv(fmap).chunk(2, dim=1))
        q, k, v = map(lambda t: rearrange(t, "b (h d) x y -> (b h) (x y) d", h=self.heads), (q, k, v))
        dots = torch.einsum("b i d, b j d -> b i j", q, k)
        return dots.softmax(dim=-1)
"""
    assert_lint(src, m.UnscaledScores)
    assert codes(src.replace("q, k)\n", "q, k) / math.sqrt(q.shape[-1])\n")) == []


def test_torch_split_of_a_projection_gives_feature_pieces():
    # diffusers' fused processors: torch.split(attn.to_qkv(x), n, dim=-1) then a head split of each piece
    src = HEADER + """
def fused(attn, hidden_states, batch_size):
    qkv = attn.to_qkv(hidden_states)
    query, key, value = torch.split(qkv, qkv.shape[-1] // 3, dim=-1)
    inner_dim = key.shape[-1]
    head_dim = inner_dim // attn.heads
    query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
    key = key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
    value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
    return F.scaled_dot_product_attention(query, key, value)
"""
    assert codes(src) == []
    assert_lint(src.replace("query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)",
                            "query.view(batch_size, attn.heads, -1, head_dim)"), m.SplitWithoutTranspose)


def test_heads_split_back_out_of_a_batch_heads_axis_in_the_wrong_order():
    # (B*h, N, d) viewed as (B, N, h, d): the heads are taken from the batch axis, after the positions
    src = HEADER + """
class Attention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
    def forward(self, x):
        B, H, W, _ = x.shape
        N = H * W
        qkv = self.qkv(x.reshape(B, N, -1)).view(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, B * self.num_heads, N, -1).unbind(0)
        x = F.scaled_dot_product_attention(q, k, v)
        return x.view(B, self.num_heads, N, -1).permute(0, 2, 1, 3).reshape(B, H, W, -1)
"""
    assert codes(src) == []
    assert_lint(src.replace("x.view(B, self.num_heads, N, -1).permute(0, 2, 1, 3)", "x.view(B, N, self.num_heads, -1)"),
                m.ReshapeOrder)


def test_a_merge_that_skips_the_heads_is_flagged_whatever_the_head_size():
    # the value head size comes from a split by a list of sizes (unnamed); (B, heads, N, ?) -> (B, N, width)
    src = HEADER + """
class Attention(nn.Module):
    def __init__(self, dim, key_dim, num_heads, attn_ratio):
        super().__init__()
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.val_dim = int(attn_ratio * key_dim)
        self.out_dim = self.val_dim * num_heads
        self.scale = key_dim ** -0.5
        self.qkv = nn.Linear(dim, num_heads * (2 * key_dim + self.val_dim))
    def forward(self, x):
        B, N, _ = x.shape
        qkv = self.qkv(x).view(B, N, self.num_heads, -1).permute(0, 2, 1, 3)
        q, k, v = qkv.split([self.key_dim, self.key_dim, self.val_dim], dim=3)
        attn = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, N, self.out_dim)
"""
    assert codes(src) == []
    assert_lint(src.replace("(attn @ v).transpose(1, 2)", "(attn @ v)"), m.MergeWithoutTranspose)
    assert_lint(src.replace("(attn @ v).transpose(1, 2).reshape(B, N, self.out_dim)",
                            "(attn @ v).reshape(B, -1, self.out_dim)"), m.MergeWithoutTranspose)  # positions as -1
    assert codes(src.replace("(attn @ v).transpose(1, 2).reshape(B, N, self.out_dim)",
                             "(attn @ v).transpose(1, 2).reshape(B, -1, self.out_dim)")) == []
    assert codes(src.replace("(attn @ v).transpose(1, 2).reshape(B, N, self.out_dim)",
                             "(attn @ v).reshape(B, self.num_heads * N, -1)")) == []  # heads kept first: no mix


def test_the_minus_one_of_a_window_view_is_the_batch_divided_by_the_windows():
    # attn.view(-1, nW, h, N, N) then attn.view(-1, h, N, N): the leading axis is B_ again, so the merge is checked
    src = HEADER + """
class WindowAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
    def forward(self, x, mask):
        B_, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B_, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        num_win = mask.shape[0]
        attn = attn.view(-1, num_win, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, self.num_heads, N, N).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B_, N, -1)
"""
    assert codes(src) == []
    assert_lint(src.replace("(attn @ v).transpose(1, 2)", "(attn @ v)"), m.MergeWithoutTranspose)


def test_a_file_helper_that_cannot_be_followed_is_read_by_its_name():
    # the rotary helper returns through a call nobody models: q = apply_rope(q, ...) keeps q's axes
    src = HEADER + """from rotary import rotate

def apply_rope(x, cos, sin):
    return rotate(x, cos, sin)

def attend(x, q_proj, cos, sin, heads, d_head):
    B, N, C = x.shape
    q = q_proj(x).view(B, N, heads, d_head)
    q = apply_rope(q, cos, sin)
    q = q.transpose(1, 2)
    y = F.scaled_dot_product_attention(q, q, q)
    return y.transpose(1, 2).reshape(B, N, -1)
"""
    assert codes(src) == []
    assert_lint(src.replace("y.transpose(1, 2).reshape", "y.reshape"), m.MergeWithoutTranspose)


def test_an_eager_branch_beside_a_fused_call_with_scale_one_takes_no_scaling():
    # QK-normed models (Gemma's vision towers) pass scale=1.0 to SDPA; the eager branch follows suit
    src = HEADER + """
def attend(q_norm, k_norm, q, k, v, fused):
    q, k = q_norm(q.transpose(1, 2)), k_norm(k.transpose(1, 2))
    if fused:
        return F.scaled_dot_product_attention(q, k, v, scale=1.0)
    attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
    return attn @ v
"""
    assert codes(src) == []
    assert_lint(src.replace("scale=1.0", "scale=None"), m.UnscaledScores)


BART = HEADER + """
class Attention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
    def forward(self, hidden_states, past_key_value=None, attention_mask=None):
        bsz, tgt_len, embed_dim = hidden_states.size()
        query_states = self.q_proj(hidden_states){scale}
        if past_key_value is not None:
            key_states, value_states = past_key_value
        else:
            key_states = self.k_proj(hidden_states).view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
            value_states = self.v_proj(hidden_states).view(bsz, -1, self.num_heads, self.head_dim).transpose(1, 2)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = query_states.view(bsz, tgt_len, self.num_heads, self.head_dim).transpose(1, 2)
        query_states = query_states.reshape(*proj_shape)
        key_states = key_states.reshape(*proj_shape)
        value_states = value_states.reshape(*proj_shape)
        src_len = key_states.size(1)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        if attention_mask is not None:
            attn_weights = attn_weights.view(bsz, self.num_heads, tgt_len, src_len) + attention_mask
            attn_weights = attn_weights.view(bsz * self.num_heads, tgt_len, src_len)
        attn_weights = nn.functional.softmax(attn_weights, dim={dim})
        attn_output = torch.bmm(attn_weights, value_states)
        attn_output = attn_output.view(bsz, self.num_heads, tgt_len, self.head_dim).transpose(1, 2)
        return attn_output.reshape(bsz, tgt_len, self.embed_dim)
"""


def test_a_size_read_from_an_axis_names_that_axis_and_a_tuple_of_self_sizes_is_a_shape():
    # keys that may come from a cache: src_len = key_states.size(1) names their length; proj_shape is a shape
    assert codes(BART.format(scale=" * self.scaling", dim=-1)) == []
    assert_lint(BART.format(scale=" * self.scaling", dim=1), m.SoftmaxAxis)
    assert_lint(BART.format(scale=" * self.embed_dim ** -0.5", dim=-1), m.WidthScaledScores)


def test_soft_capping_keeps_the_scaling_the_scores_had():
    # cap * tanh(s / cap) does not scale the scores: an unscaled product stays unscaled through it
    src = HEADER + """
def attend(query, key, value, softcap):
    s = torch.matmul(query, key.transpose(2, 3)){scale}
    if softcap is not None:
        s = s / softcap
        s = torch.tanh(s)
        s = s * softcap
    p = F.softmax(s, dim=-1)
    return torch.matmul(p, value).transpose(1, 2)
"""
    assert codes(src.format(scale=" * query.shape[-1] ** -0.5")) == []
    assert_lint(src.format(scale=""), m.UnscaledScores)


def test_keys_that_may_come_from_a_cache_keep_the_scaling_of_the_projected_path():
    assert_lint(BART.format(scale="", dim=-1), m.UnscaledScores)


def test_channels_first_attention_transposes_the_query_not_the_key():
    # (B, heads, d, N) layout: attn = qᵀ·k is (B, heads, N, N), keys on the last axis
    src = HEADER + """
class Attention2d(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Conv2d(dim, dim * 3, 1)
    def forward(self, x):
        B, C, H, W = x.shape
        q, k, v = self.qkv(x).view(B, self.num_heads, -1, H * W).chunk(3, dim=2)
        attn = (q.transpose(-2, -1) @ k){scale}
        attn = attn.softmax(dim={dim})
        return (v @ attn.transpose(-2, -1)).view(B, -1, H, W)
"""
    assert codes(src.format(scale=" * self.scale", dim=-1)) == []
    assert_lint(src.format(scale=" * self.scale", dim=1), m.SoftmaxAxis)
    assert_lint(src.format(scale="", dim=-1), m.UnscaledScores)


def test_a_head_split_whose_minus_one_is_the_positions():
    # diffusers' processors: attn.to_q(x) of (B, T, ?) viewed as (B, heads, -1, d_head)
    src = HEADER + """
def process(attn, hidden_states):
    batch_size, sequence_length, _ = hidden_states.shape
    query = attn.to_q(hidden_states)
    inner_dim = query.shape[-1]
    head_dim = inner_dim // attn.heads
    query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
    return F.scaled_dot_product_attention(query, query, query)
"""
    assert codes(src) == []
    assert_lint(src.replace("query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)",
                            "query.view(batch_size, attn.heads, -1, head_dim)"), m.SplitWithoutTranspose)


def test_pieces_split_by_a_list_of_sizes_have_an_unnamed_last_axis():
    # torch.split(y, self.in_split, dim=-1) with in_split a list: no size named "in_split"; clamp keeps the features
    src = HEADER + """
class ParallelBlock(nn.Module):
    def __init__(self, dim, num_heads, mlp_dim):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.in_split = [mlp_dim] + [dim] * 3
        self.in_proj = nn.Linear(dim, mlp_dim + 3 * dim)
        self.qkv = nn.Linear(dim, 3 * dim)
    def forward(self, x):
        B, N, C = x.shape
        x_mlp, q, k, v = torch.split(self.in_proj(x), self.in_split, dim=-1)
        v = v.view(B, N, self.num_heads, self.head_dim).transpose(1, 2)
        qkv = self.qkv(x).clamp(min=-8, max=8)
        q, k, _ = qkv.chunk(3, dim=2)
        q = q.reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)
        return q, v
"""
    assert codes(src) == []
    assert_lint(src.replace("v.view(B, N, self.num_heads, self.head_dim).transpose(1, 2)",
                            "v.view(B, self.num_heads, N, self.head_dim)"), m.SplitWithoutTranspose)
    assert_lint(src.replace("q.reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)",
                            "q.reshape(B, self.num_heads, N, self.head_dim)"), m.SplitWithoutTranspose)


def test_projections_joined_along_the_positions_keep_their_features_last():
    # joint attention: image and text queries concatenated on dim=1, then split into heads
    src = HEADER + """
def joint(attn, hidden_states, context, batch_size, head_dim):
    query = torch.cat([attn.to_q(hidden_states), attn.add_q_proj(context)], dim=1)
    query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
    return F.scaled_dot_product_attention(query, query, query)
"""
    assert codes(src) == []
    assert_lint(src.replace("query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)",
                            "query.view(batch_size, attn.heads, -1, head_dim)"), m.SplitWithoutTranspose)


def test_twice_the_heads_split_from_the_width():
    # differential attention splits 2 * heads maps out of the width
    src = HEADER + """
class DiffAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads // 2
        self.q = nn.Linear(dim, dim)
    def forward(self, x):
        B, N, C = x.shape
        q = self.q(x).reshape(B, N, 2 * self.num_heads, self.head_dim).transpose(1, 2)
        return q
"""
    assert codes(src) == []
    assert_lint(src.replace("reshape(B, N, 2 * self.num_heads, self.head_dim).transpose(1, 2)",
                            "reshape(B, 2 * self.num_heads, N, self.head_dim)"), m.SplitWithoutTranspose)


def test_square_scores_viewed_per_window_stay_scores():
    # Swin in transformers: the window size is called ``dim`` (no axis name), the view ends with (dim, dim)
    src = HEADER + """
class SwinSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_heads):
        super().__init__()
        self.num_attention_heads = num_heads
        self.attention_head_size = hidden_size // num_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(hidden_size, self.all_head_size)
    def forward(self, hidden_states, attention_mask=None):
        batch_size, dim, num_channels = hidden_states.shape
        hidden_shape = (batch_size, dim, -1, self.attention_head_size)
        q = self.query(hidden_states).view(hidden_shape).transpose(1, 2)
        scores = torch.matmul(q, q.transpose(-1, -2)) / {scale}
        if attention_mask is not None:
            mask_shape = attention_mask.shape[0]
            scores = scores.view(batch_size // mask_shape, mask_shape, self.num_attention_heads, dim, dim)
            scores = scores + attention_mask.unsqueeze(1).unsqueeze(0)
            scores = scores.view(-1, self.num_attention_heads, dim, dim)
        return nn.functional.softmax(scores, dim=-1)
"""
    assert codes(src.format(scale="math.sqrt(self.attention_head_size)")) == []
    assert_lint(src.format(scale="self.all_head_size ** 0.5"), m.WidthScaledScores)


def test_the_width_is_also_what_the_head_size_divides():
    # num_heads = dim // head_dim: dim is the width, whatever it is called
    src = HEADER + """
class EfficientAttention(nn.Module):
    def __init__(self, dim, head_dim=32):
        super().__init__()
        self.dim = dim
        self.num_heads = self.dim // head_dim
        self.head_dim = head_dim
        self.q = nn.Linear(dim, dim)
    def forward(self, x):
        B, N, C = x.shape
        q = self.q(x).reshape(B, N, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        q = q * {scale}
        attn = (q @ q.transpose(-1, -2)).softmax(dim=-1)
        return (attn @ q).transpose(1, 2).reshape(B, N, C)
"""
    assert codes(src.format(scale="self.head_dim ** -0.5")) == []
    assert_lint(src.format(scale="self.dim ** -0.5"), m.WidthScaledScores)


def test_a_merge_into_height_and_width_that_skips_the_heads():
    src = HEADER + """
class MultiScaleAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
    def forward(self, x):
        B, H, W, _ = x.shape
        q, k, v = torch.unbind(self.qkv(x).reshape(B, H * W, 3, self.num_heads, -1), 2)
        x = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return x.transpose(1, 2).reshape(B, H, W, -1)
"""
    assert codes(src) == []
    assert_lint(src.replace("x.transpose(1, 2).reshape(B, H, W, -1)", "x.reshape(B, H, W, -1)"),
                m.MergeWithoutTranspose)


def test_a_projection_of_an_untracked_input_is_unscaled():
    # learned latent queries: self.q(self.latent.expand(...)) is fresh, so the scores need the scaling
    src = HEADER + """
class AttentionPoolLatent(nn.Module):
    def __init__(self, dim, num_heads, latent_len):
        super().__init__()
        self.num_heads, self.head_dim, self.latent_len = num_heads, dim // num_heads, latent_len
        self.latent = nn.Parameter(torch.zeros(1, latent_len, dim))
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, dim * 2)
    def forward(self, x):
        B, N, C = x.shape
        q = self.q(self.latent.expand(B, -1, -1))
        q = q.reshape(B, self.latent_len, self.num_heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).reshape(B, N, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q{scale} @ k.transpose(-2, -1)).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, self.latent_len, C)
"""
    assert codes(src.format(scale=" * self.head_dim ** -0.5")) == []
    assert_lint(src.format(scale=""), m.UnscaledScores)
    scalar = src.format(scale="").replace("self.q = nn.Linear(dim, dim)", "self.q = nn.Linear(dim, 3)")
    assert m.UnscaledScores.code not in codes(scalar)  # a literal few features: no model width


def test_keys_and_values_from_a_cache_take_the_querys_batch_axes():
    # XLM-style: k and v may come from a cache (layout unknown); the scores and the context keep q's leading axes
    src = HEADER + """
class MultiHeadAttention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.q_lin = nn.Linear(dim, dim)
        self.k_lin = nn.Linear(dim, dim)
        self.v_lin = nn.Linear(dim, dim)
    def forward(self, input, cache=None):
        bs, qlen, dim = input.size()
        q = self.q_lin(input).view(bs, -1, self.n_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            k, v = cache.get()
        else:
            k = self.k_lin(input).view(bs, -1, self.n_heads, self.head_dim).transpose(1, 2)
            v = self.v_lin(input).view(bs, -1, self.n_heads, self.head_dim).transpose(1, 2)
        q = q / math.sqrt(self.head_dim)
        weights = F.softmax(torch.matmul(q, k.transpose(2, 3)).float(), dim={dim})
        context = torch.matmul(weights, v)
        return context{merge}.contiguous().view(bs, -1, self.n_heads * self.head_dim)
"""
    assert codes(src.format(dim=-1, merge=".transpose(1, 2)")) == []
    assert_lint(src.format(dim=1, merge=".transpose(1, 2)"), m.SoftmaxAxis)
    assert_lint(src.format(dim=-1, merge=""), m.MergeWithoutTranspose)


def test_the_head_count_is_what_splits_the_width_into_the_head_size():
    # 'num_attn_heads' is no vocabulary name: head_dim = hidden_size // num_attn_heads makes it the head count
    src = HEADER + """
class ProphetAttention(nn.Module):
    def __init__(self, hidden_size, num_attn_heads):
        super().__init__()
        self.num_attn_heads = num_attn_heads
        self.head_dim = hidden_size // num_attn_heads
        self.query_proj = nn.Linear(hidden_size, hidden_size)
    def forward(self, hidden_states):
        batch_size, tgt_len, hidden_size = hidden_states.size()
        q = self.query_proj(hidden_states) / self.head_dim ** 0.5
        q = q.view(batch_size, tgt_len, self.num_attn_heads, self.head_dim).transpose(1, 2)
        return F.scaled_dot_product_attention(q, q, q, scale=1.0)
"""
    assert codes(src) == []
    assert_lint(src.replace("q.view(batch_size, tgt_len, self.num_attn_heads, self.head_dim).transpose(1, 2)",
                            "q.view(batch_size, self.num_attn_heads, tgt_len, self.head_dim)"), m.SplitWithoutTranspose)


def test_an_attribute_the_head_count_splits_is_the_width_in_shapes():
    # 'dim_out' is no vocabulary name; head_dim = dim_out // heads makes it the width a merge must rebuild
    src = HEADER + """
class MaskUnitAttention(nn.Module):
    def __init__(self, dim, dim_out, heads):
        super().__init__()
        self.dim_out, self.heads = dim_out, heads
        self.head_dim = dim_out // heads
        self.qkv = nn.Linear(dim, 3 * dim_out)
    def forward(self, x):
        B, N, _ = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        x = F.scaled_dot_product_attention(q, k, v)
        return x.transpose(1, 2).reshape(B, -1, self.dim_out)
"""
    assert codes(src) == []
    assert_lint(src.replace("x.transpose(1, 2).reshape(B, -1, self.dim_out)", "x.reshape(B, -1, self.dim_out)"),
                m.MergeWithoutTranspose)


def test_a_scale_of_the_head_count_alone_is_not_the_head_size():
    # a local scale from the head count, and an attribute the head count splits the width by, whatever its name
    src = HEADER + """
class A(nn.Module):
    def __init__(self, width, groups):
        super().__init__()
        self.groups = groups
        self.head_dim = width // groups
        self.qkv = nn.Linear(width, 3 * width)
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).reshape(B, T, 3, self.groups, self.head_dim).permute(2, 0, 3, 1, 4)
        scale = {scale}
        attn = (q @ k.transpose(-2, -1) * scale).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, C)
"""
    assert_lint(src.format(scale="self.groups ** -0.5"), m.HeadsScaledScores)
    assert codes(src.format(scale="self.head_dim ** -0.5")) == []
    direct = src.replace("* scale)", "/ math.sqrt(self.groups))")
    assert_lint(direct.format(scale="None"), m.HeadsScaledScores)
    assert codes(direct.replace("self.groups))", "self.head_dim))").format(scale="None")) == []


def test_a_shape_assert_binds_the_axes_of_what_nobody_tracked():
    # the output of an op lint does not model (checkpoint) is named by the assert on its shape
    src = HEADER + """
def f(x, q, k, v, n_head, attend):
    B, T, C = x.shape
    y = attend(q, k, v)
    assert {shape} == (B, n_head, T, C // n_head)
    return y.reshape(B, T, C)
"""
    for shape in ("y.shape", "y.size()", "tuple(y.shape)"):
        assert_lint(src.format(shape=shape), m.MergeWithoutTranspose)
    assert codes(src.format(shape="y.shape").replace("y.reshape(", "y.transpose(1, 2).reshape(")) == []
    assert codes(src.format(shape="y.shape").replace("assert y.shape ==", "print")) == []  # no assert: unknown
    assert codes(src.format(shape="y.shape").replace("(B, n_head, T, C // n_head)", "(B, T, T)")) == []  # rank 3
    # scores of unknown rank: the assert gives the rank, and softmax over dim=1 is over the heads
    scores = HEADER + """
def g(q, k, b, h, t):
    s = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    assert s.size() == (b, h, t, t)
    return s.softmax(dim={dim})
"""
    assert_lint(scores.format(dim=1), m.SoftmaxAxis)
    assert codes(scores.format(dim=-1)) == codes(scores.format(dim=3)) == []


def test_an_unknown_kernel_on_one_path_takes_the_fused_paths_layout():
    # diffusers' XLA/NPU processors: flash_attention(...) on one branch, SDPA on the other, one merge after both
    src = HEADER + """
from kernels import flash_attention

def f(x, to_q, heads, use_flash):
    batch_size, seq, inner_dim = x.shape
    head_dim = inner_dim // heads
    query = to_q(x).view(batch_size, -1, heads, head_dim).transpose(1, 2)
    if use_flash:
        out = flash_attention(query, query, query)
    else:
        out = F.scaled_dot_product_attention(query, query, query)
    return out.reshape(batch_size, -1, heads * head_dim)
"""
    assert_lint(src, m.MergeWithoutTranspose)
    assert codes(src.replace("out.reshape(", "out.transpose(1, 2).reshape(")) == []
    # keys projected on one path and read from a cache on the other keep only their scaling, as before
    projected = src.replace("F.scaled_dot_product_attention(query, query, query)", "query")
    assert codes(projected) == []


def test_per_head_queries_after_an_unknown_helper_on_one_path_keep_their_scaling():
    # timm's MViT: q from an unbound qkv, or pooled by a helper lint does not follow; the scores still need scaling
    src = HEADER + """
from .pool import pool_heads

class A(nn.Module):
    def __init__(self, dim, num_heads, pool):
        super().__init__()
        self.num_heads, self.pool = num_heads, pool
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        if self.pool is not None:
            q = pool_heads(q, self.pool)
        attn = ({q} @ k.transpose(-2, -1)).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, N, C)
"""
    assert codes(src.format(q="q * self.scale")) == []
    assert_lint(src.format(q="q"), m.UnscaledScores)


def test_score_rows_of_two_query_groups_stacked_are_still_the_scores():
    # LUKE-style: word and entity queries against the same keys, their score rows joined along the queries
    src = HEADER + """
def f(x, e, heads):
    B, T, C = x.shape
    k = x.view(B, T, heads, C // heads).transpose(1, 2)
    qw = x.view(B, T, heads, C // heads).transpose(1, 2)
    qe = e.view(B, -1, heads, C // heads).transpose(1, 2)
    s = torch.cat([qw @ k.transpose(-1, -2), qe @ k.transpose(-1, -2)], dim={dim})
    return (s / math.sqrt(C // heads)).softmax(dim=1)
"""
    assert_lint(src.format(dim=2), m.SoftmaxAxis)
    assert_lint(src.format(dim=-2), m.SoftmaxAxis)
    assert codes(src.format(dim=1)) == []  # heads of two tensors stacked: no longer one attention's scores


def test_a_width_scale_on_one_path_is_reported_through_later_factors_and_a_causal_where():
    # ImageGPT/GPT-2 style: the scale is optional, another factor may follow, the causal mask is a torch.where
    src = HEADER + """
class A(nn.Module):
    def __init__(self, hidden_size, num_heads, scale_attn_weights, layer_idx):
        super().__init__()
        self.embed_dim, self.num_heads = hidden_size, num_heads
        self.head_dim = self.embed_dim // self.num_heads
        self.scale_attn_weights, self.layer_idx = scale_attn_weights, layer_idx
    def _attn(self, query, key, value, causal_mask, by_layer):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        if self.scale_attn_weights:
            attn_weights = attn_weights / {scale}
        if by_layer:
            attn_weights = attn_weights / float(self.layer_idx + 1)
        mask_value = torch.finfo(attn_weights.dtype).min
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        attn_weights = nn.Softmax(dim=-1)(attn_weights)
        return torch.matmul(attn_weights, value)
"""
    found = [f for f in lint_source(textwrap.dedent(src.format(scale="self.embed_dim ** 0.5")))]
    assert [(f.code, f.line) for f in found] == [(m.WidthScaledScores.code, 14)]  # at the width, not a later factor
    assert codes(src.format(scale="self.head_dim ** 0.5")) == []
    # unscaled scores through a causal where are not claimed (GPT-Neo leaves them unscaled by design)
    assert codes(src.format(scale="self.embed_dim ** 0.5").replace("attn_weights / self.embed_dim ** 0.5", "attn_weights")
                 ) == []


def test_a_padding_mask_added_after_a_causal_where_and_the_softmax_is_found():
    # GPT-Neo style (unscaled by design): the scores stay the scores through torch.where, the probs stay probs
    src = HEADER + """
def attend(query, key, value, causal_mask, attention_mask):
    attn_weights = torch.matmul(query, key.transpose(-1, -2))
    mask_value = torch.finfo(attn_weights.dtype).min
    attn_weights = torch.where(causal_mask, attn_weights, mask_value)
    attn_weights = F.softmax(attn_weights, dim=-1)
    attn_weights = attn_weights + attention_mask
    return torch.matmul(attn_weights, value)
"""
    assert_lint(src, m.MaskAfterSoftmax)


def test_a_parameter_used_as_a_projection_is_a_weight_nobody_scaled():
    # timm's MultiQueryAttentionV2: queries and keys are einsums with nn.Parameter weights
    src = HEADER + """
class A(nn.Module):
    def __init__(self, dim, heads, key_dim):
        super().__init__()
        self.scale = key_dim ** -0.5
        self.query_proj = nn.Parameter(torch.empty((heads, key_dim, dim)))
        self.key_proj = nn.Parameter(torch.empty((dim, key_dim)))
    def forward(self, x):
        b, n, d = x.shape
        q = torch.einsum('bnd,hkd->bnhk', x, self.query_proj)
        k = torch.einsum('bmd,dk->bmk', x, self.key_proj)
        attn = torch.einsum('bnhk,bmk->bnhm', q, k){scale}
        return attn.softmax(dim=-1)
"""
    assert_lint(src.format(scale=""), m.UnscaledScores)
    assert codes(src.format(scale=" * self.scale")) == []
    # a parameter as a multiplier is a learned temperature, not an unscaled weight
    assert codes(src.format(scale=" * self.query_proj")) == []


def test_a_convolution_makes_fresh_features_and_a_pointwise_one_over_heads_keeps_the_scores():
    src = HEADER + """
class A(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.scale = self.head_dim ** -0.5
        self.pwise = nn.Conv2d(dim, 3 * dim, kernel_size=1)
        self.talking_head = nn.Conv2d(heads, heads, kernel_size=1)
    def forward(self, x):
        B, C, H, W = x.shape
        qkv = self.pwise(x).reshape(B, self.heads, 3 * self.head_dim, H * W).permute(0, 1, 3, 2)
        q, k, v = qkv.chunk(3, dim=3)
        attn = q @ k.transpose(-2, -1){scale}
        attn = self.talking_head(attn)
        return attn.softmax(dim=-1) @ v
"""
    assert_lint(src.format(scale=""), m.UnscaledScores)
    assert codes(src.format(scale=" * self.scale")) == []
    # a convolution that changes the shape makes fresh features: no scores reach the softmax
    assert codes(src.format(scale="").replace("nn.Conv2d(heads, heads, kernel_size=1)",
                                              "nn.Conv2d(heads, heads, kernel_size=3, padding=1, stride=2)")) == []


def test_map_of_a_rearrange_module_over_qkv_splits_each_piece():
    src = HEADER + """from einops.layers.torch import Rearrange

class A(nn.Module):
    def __init__(self, dim, heads, dim_head):
        super().__init__()
        self.scale = dim_head ** -0.5
        self.split_heads = Rearrange('b n (h d) -> b h n d', h=heads)
        self.to_q, self.to_k, self.to_v = (nn.Linear(dim, dim_head * heads) for _ in range(3))
    def forward(self, x):
        q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
        q, k, v = map(self.split_heads, (q, k, v))
        logits = torch.einsum('bhnd,bhmd->bhnm', q, k){scale}
        return logits.softmax(dim=-1)
"""
    assert_lint(src.format(scale=""), m.UnscaledScores)
    assert codes(src.format(scale=" * self.scale")) == []


def test_a_lower_bound_on_the_rank_survives_the_key_transpose():
    # Hiera: q is 5-D on one path and 4-D on the other; the scores have at least 4 axes, dim=1 is not the keys
    src = HEADER + """
class A(nn.Module):
    def __init__(self, dim, heads, windowed):
        super().__init__()
        self.heads, self.head_dim, self.windowed = heads, dim // heads, windowed
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
    def forward(self, x):
        B, N, _ = x.shape
        if self.windowed:
            q, k, v = self.qkv(x).reshape(B, -1, 4, 3, self.heads, self.head_dim).permute(3, 0, 4, 2, 1, 5).unbind(0)
            q = q.view(B, self.heads, 4, 2, -1, self.head_dim).amax(dim=3)  # query pooling: its rank unknown here
        else:
            q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * self.scale) @ k.transpose(-1, -2)
        return attn.softmax(dim={dim}) @ v
"""
    assert_lint(src.format(dim=1), m.SoftmaxAxis)
    assert codes(src.format(dim=-1)) == []


def test_a_scale_of_one_scales_nothing():
    src = HEADER + """
def attend(q, k, v, d_head):
    scale = {scale}
    weight = (q * scale) @ (k * scale).transpose(-2, -1)
    return torch.softmax(weight, dim=-1) @ v
"""
    assert_lint(src.format(scale="1"), m.UnscaledScores)
    assert codes(src.format(scale="1 / math.sqrt(math.sqrt(d_head))")) == []


def test_talking_heads_mix_the_heads_of_the_scores_and_keep_them_scores():
    # CaiT: a Linear(heads, heads) over the permuted scores before and after the softmax
    src = HEADER + """
class A(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads, self.scale = num_heads, (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj_l = nn.Linear(num_heads, num_heads)
    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0]{scale}, qkv[1], qkv[2]
        attn = q @ k.transpose(-2, -1)
        attn = self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return attn.softmax(dim={dim}) @ v
"""
    assert_lint(src.format(scale="", dim=-1), m.UnscaledScores)
    assert_lint(src.format(scale=" * self.scale", dim=1), m.SoftmaxAxis)
    assert codes(src.format(scale=" * self.scale", dim=-1)) == []


def test_h_before_w_in_an_image_shape_is_the_height_not_the_head_count():
    src = HEADER + """
class A(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.num_heads, self.head_dim = heads, dim // heads
        self.pwise = nn.Conv2d(dim, 3 * dim, 1)
    def forward(self, x):
        N, _, h, w = x.size()
        qkv = self.pwise(x).reshape(N, self.num_heads, 3 * self.head_dim, h * w).permute(0, 1, 3, 2)
        q, k, v = qkv.chunk(3, dim=3)
        attn = q @ k.transpose(-2, -1)
        return attn.softmax(dim=2) @ v
"""
    found = lint_source(textwrap.dedent(src), config=EVERY_RULE)
    assert [f.code for f in found] == [m.SoftmaxAxis.code, m.UnscaledScores.code]
    # the query axis is named by the positions h * w, not by a head count times w
    assert "[N, heads, h*w, h*w]" in found[0].message, found[0].message


def test_a_leading_ellipsis_in_einsum_stands_for_the_leading_axes():
    src = HEADER + """
class A(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        sim = torch.einsum('{equation}', q, k){scale}
        return sim.softmax(dim={dim})
"""
    for equation in ("... i d, ... j d -> ... i j", "...id,...jd->...ij"):
        assert_lint(src.format(equation=equation, scale="", dim=-1), m.UnscaledScores)
        assert_lint(src.format(equation=equation, scale=" * self.scale", dim=1), m.SoftmaxAxis)
        assert codes(src.format(equation=equation, scale=" * self.scale", dim=-1)) == []
    # the keys' letter first: the softmax over the last axis is over the queries
    assert_lint(src.format(equation="...id,...jd->...ji", scale=" * self.scale", dim=-1), m.SoftmaxAxis)


def test_scores_through_an_activation_are_weights_and_a_zero_fill_masks_them():
    # sigmoid or ReLU attention, exp before a manual normalisation, logsigmoid forget gates: 0 is the masked value
    src = HEADER + """
def attend(q, k, v, mask):
    b, h, n, d = q.shape
    scores = torch.einsum('... i d, ... j d -> ... i j', q, k) * d ** -0.5
    weights = {activation}
    weights = weights.masked_fill(mask, 0.)
    return weights @ v
"""
    for activation in ("torch.sigmoid(scores)", "F.relu(scores)", "scores.exp()", "F.logsigmoid(scores)"):
        assert codes(src.format(activation=activation)) == [], activation
    imported = src.replace("import math, torch\n", "import math, torch\nfrom torch.nn.functional import relu\n")
    assert codes(imported.format(activation="relu(scores)")) == []
    # soft-capping keeps logits: a 0 fill there does not mask the softmax that follows
    capped = src.replace("return weights @ v", "return weights.softmax(dim=-1) @ v")
    assert_lint(capped.format(activation="torch.tanh(scores / 50) * 50"), m.FillDoesNotMask)
    # ... but where no softmax (nor exp) follows, the weights are used as they are and 0 removes the keys
    assert codes(src.format(activation="torch.tanh(scores / 50) * 50")) == []


ALLOCATING = HEADER + """
class A(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.d_head = d_model // n_head
    def forward(self, x):
        B, T, C = x.shape
        out = {alloc}
        return out.reshape(B, T, C)
"""


@pytest.mark.parametrize("alloc", [
    "torch.zeros(B, self.n_head, T, self.d_head)",
    "torch.empty((B, self.n_head, T, self.d_head), dtype=x.dtype)",
    "torch.full((B, self.n_head, T, self.d_head), 0.0)",
    "x.new_zeros(B, self.n_head, T, self.d_head)",
    "x.new_full((B, self.n_head, T, self.d_head), 0.0)",
    "torch.zeros_like(x.view(B, T, self.n_head, self.d_head).transpose(1, 2))",
])
def test_allocated_tensors_have_the_axes_of_their_sizes(alloc):
    assert_lint(ALLOCATING.format(alloc=alloc), m.MergeWithoutTranspose)
    # the sizes in the merged order need no transpose
    merged = alloc.replace("self.n_head, T", "T, self.n_head").replace(".transpose(1, 2)", "")
    assert codes(ALLOCATING.format(alloc=merged)) == []


def test_allocated_scores_added_to_products_stay_the_scores():
    src = HEADER + """
def f(q, k):
    B, H, T, D = q.shape
    s = torch.full((B, H, T, T), float("-inf"), device=q.device).triu(1)
    s = s + q @ k.transpose(-1, -2) / math.sqrt(D)
    return s.softmax(dim={dim})
"""
    assert_lint(src.format(dim=1), m.SoftmaxAxis)
    assert codes(src.format(dim=-1)) == []


def test_a_zero_dimensional_tensor_is_a_factor():
    # LightGlue's ``m / torch.full((), d) ** 0.25`` on both sides: a scaling, not an elementwise product
    src = HEADER + """
def f(a, b):
    d = a.shape[-1]
    a = a / torch.full((), d) ** 0.25
    b = b / torch.full((), d) ** 0.25
    return (a @ b.transpose(-1, -2)).softmax(dim=-1)
"""
    assert codes(src) == []


def test_a_module_of_another_class_returns_what_its_forward_returns():
    src = HEADER + """
class Attention(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.proj = nn.Linear(d_model, d_model)
    def forward(self, x):
        B, T, C = x.shape
        return self.proj(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)

class Block(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.attn = Attention(d_model, n_head)
    def forward(self, x):
        B, T, C = x.shape
        y = self.attn(x)
        return {merge}
"""
    assert_lint(src.format(merge="y.reshape(B, T, C)"), m.MergeWithoutTranspose)
    assert codes(src.format(merge="y.transpose(1, 2).reshape(B, T, C)")) == []


def test_pieces_of_the_features_axis_are_no_head_vectors():
    # timm's scalar attention: q, k, v = qkv.unbind(-1) of a Linear(1, 3); products of the pieces contract the
    # positions, which 1/sqrt(d_head) says nothing about
    src = HEADER + """
class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(1, 3)
    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).unbind(-1)
        return (q @ k.transpose(-1, -2)).softmax(dim=-1) @ v
"""
    assert codes(src) == []


@pytest.mark.parametrize("scaling, expected", [
    ("q.mul_(self.scaling)", []),
    ("q.div_(math.sqrt(self.head_dim))", []),
    ("pass", [m.UnscaledScores]),
])
def test_in_place_scaling_of_the_queries_is_their_scaling(scaling, expected):
    # ``q.mul_(s)`` is ``q = q * s``: the scores made from q are scaled, and q keeps its layout
    src = HEADER + f"""
class A(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
    def forward(self, x):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        {scaling}
        return F.softmax(torch.matmul(q, k.transpose(2, 3)).float(), dim=-1)
"""
    assert_lint(src, *expected)


def test_a_rotary_table_named_cache_is_no_kv_cache():
    # lit-llama's ``apply_rope(x, rope_cache)`` cuts the table to the tokens it is given: no cache offset there
    src = HEADER + """
def apply_rope(x, rope_cache):
    T = x.size(1)
    rope_cache = rope_cache[:T]
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * rope_cache.view(1, T, 1, -1)).flatten(3)
"""
    assert_lint(src)


def test_channels_first_scores_put_the_keys_last_only_when_the_left_operand_is_the_query():
    # aᵀ·b with both (B, C, N): either side may be the query. mkᵀ·qk is (B, memory, query), normalised over dim=1
    src = HEADER + """
def read(mk, qk):
    B, C, H, W = qk.shape
    {left} = {left}.flatten(start_dim=2)
    qk = qk.flatten(start_dim=2)
    affinity = {left}.transpose(1, 2) @ qk / math.sqrt(C)
    return F.softmax(affinity, dim={dim})
"""
    src = src.replace("def read(mk, qk):\n    B, C, H, W = qk.shape", "def read({left}, qk):\n    B, C, H, W = {left}.shape")
    assert codes(src.format(left="mk", dim=1)) == []
    assert codes(src.format(left="mk", dim=-1)) == []  # which one is right, the product alone does not say
    assert_lint(src.format(left="query", dim=1), m.SoftmaxAxis)
    assert codes(src.format(left="query", dim=-1)) == []


def test_a_size_one_axis_broadcast_against_a_wider_one_takes_its_size():
    # (b, n, 1) + (b, n, n) is (b, n, n): a softmax over its last axis weighs n positions, not one
    src = HEADER + """
class Pool(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.score = nn.Linear(d, 1)
        self.key = nn.Linear(d, d)

    def forward(self, x):
        b, n, d = x.shape
        s = self.score(x){plus}
        return s.softmax(dim=-1)
"""
    assert_lint(src.format(plus=""), m.SoftmaxOverOne)
    assert codes(src.format(plus=" + x.new_zeros(b, n, n)")) == []
    assert codes(src.format(plus=" * self.key(x)")) == []
    assert_lint(src.format(plus=" + x.new_zeros(b, n, 1)"), m.SoftmaxOverOne)
