"""PyTorch confirms SC136-SC139 on their corpus pairs: the flagged module misbehaves, its clean twin does not."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .test_runtime import _buggy, _clean


@torch.no_grad()
def test_sc136_rotated_values_make_the_average_depend_on_position_and_the_twin_does_not():
    torch.manual_seed(0)
    buggy = _buggy("sc136_rotary_on_values").RotarySelfAttention(16, 2)
    clean = _clean("sc136_rotary_on_values").RotarySelfAttention(16, 2)
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(1, 1, 16).expand(2, 6, 16)  # one token repeated: every value is the same vector
    out = clean(x)
    assert torch.allclose(out, out[:, :1].expand_as(out), atol=1e-5)  # averaging equal values gives that value
    out = buggy(x)
    assert not torch.allclose(out, out[:, :1].expand_as(out), atol=1e-3)


class _Recorder(torch.nn.Module):
    """A conditioned model that returns uniform logits and keeps the context mask it was given."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, tokens, context=None, context_mask=None):
        self.seen.append(context_mask)
        return torch.zeros(*tokens.shape, 5)


@torch.no_grad()
def test_sc137_a_given_context_mask_never_reaches_the_model_and_the_twin_passes_it_on():
    context = torch.randn(2, 4, 8)
    given = torch.tensor([[True, True, False, False], [True, False, False, False]])
    for corpus, arrives in ((_clean, True), (_buggy, False)):
        net = _Recorder()
        corpus("sc137_given_only_when_absent").Sampler(net, 8).generate(torch.zeros(2, 1, dtype=torch.long), 2,
                                                                       context=context, context_mask=given)
        assert all((seen is given) == arrives for seen in net.seen)
    net = _Recorder()  # no mask given: both build one that keeps every context position
    _buggy("sc137_given_only_when_absent").Sampler(net, 8).generate(torch.zeros(2, 1, dtype=torch.long), 1,
                                                                    context=context)
    assert net.seen[0].all()


@torch.no_grad()
def test_sc138_the_mup_option_changes_nothing_and_the_twin_scales_by_the_head_size():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 64)
    for corpus, differs in ((_clean, True), (_buggy, False)):
        module = corpus("sc138_same_branches")
        plain = module.SelfAttention(module.AttentionConfig(use_mup=False))
        mup = module.SelfAttention(module.AttentionConfig(use_mup=True))
        mup.load_state_dict(plain.state_dict())
        assert (not torch.allclose(plain(x), mup(x), atol=1e-5)) == differs


def _window_reference(module, x, height):
    """Local attention by an explicit loop: each pixel attends its kernel_size x kernel_size neighbours (zero
    outside the image), keys and values read at those pixels."""
    q, k, v = module.to_qkv(x).chunk(3, dim=-1)
    b, n, c = q.shape
    width, r = n // height, module.kernel_size // 2
    out = torch.zeros_like(q)
    for i in range(n):
        y, x0 = divmod(i, width)
        keys, values = [], []
        for dy in range(-r, r + 1):
            for dx in range(-r, r + 1):
                yy, xx = y + dy, x0 + dx
                inside = 0 <= yy < height and 0 <= xx < width
                keys.append(k[:, yy * width + xx] if inside else torch.zeros(b, c))
                values.append(v[:, yy * width + xx] if inside else torch.zeros(b, c))
        scores = torch.stack([(q[:, i] * key).sum(-1) for key in keys], dim=-1) * module.scale
        out[:, i] = (F.softmax(scores, dim=-1).unsqueeze(-1) * torch.stack(values, dim=1)).sum(1)
    return out


@torch.no_grad()
def test_sc139_keys_split_kernel_first_differ_from_a_window_loop_and_the_twin_matches_it():
    torch.manual_seed(0)
    buggy = _buggy("sc139_unfold_split_order").WindowAttention(4)
    clean = _clean("sc139_unfold_split_order").WindowAttention(4)
    clean.load_state_dict(buggy.state_dict())
    x = torch.randn(2, 12, 4)  # a 3 x 4 image of 4 channels
    expected = _window_reference(clean, x, 3)
    assert torch.allclose(clean(x, 3), expected, atol=1e-5)
    assert not torch.allclose(buggy(x, 3), expected, atol=1e-3)


@torch.no_grad()
def test_sc140_a_square_alibi_bias_breaks_cached_decoding_and_the_twin_gives_the_last_rows():
    torch.manual_seed(0)
    buggy = _buggy("sc140_square_from_key_length").ALiBi(4)
    clean = _clean("sc140_square_from_key_length").ALiBi(4)
    full = torch.randn(2, 4, 6, 6)  # no cache: as many queries as keys, both agree
    assert torch.equal(buggy(full), clean(full))
    step = full[:, :, -1:]  # one new query against six keys (five cached)
    assert torch.equal(clean(step), clean(full)[:, :, -1:])
    assert buggy(step).shape != step.shape
