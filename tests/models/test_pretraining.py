"""Masked-LM and next-sentence data: binomial proportions over seeded runs, labels, reproducibility."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from reference_models.bert import BertConfig, BertLM
from reference_models.pretraining import mask_tokens, next_sentence_pairs, pack_pairs
from shapecheck import ConfigError, ShapeError, UsageError

VOCAB, MASK, CLS, SEP, PAD = 1000, 3, 1, 2, 0
SPECIAL = (PAD, CLS, SEP, MASK)
SEEDS = range(4)


def _within(count: int, trials: int, p: float, sigmas: float = 4.0) -> bool:
    """``count`` successes of ``trials`` is within ``sigmas`` standard deviations of Binomial(trials, p)."""
    return abs(count - trials * p) <= sigmas * math.sqrt(trials * p * (1 - p))


def _tokens(seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(1000 + seed)
    tokens = torch.randint(4, VOCAB, (64, 200), generator=g)  # ordinary tokens: never special
    tokens[:, 0], tokens[:, 100], tokens[:, -1] = CLS, SEP, SEP
    tokens[::3, 150:] = PAD
    return tokens


def _mask(tokens, seed, **kwargs):
    g = torch.Generator().manual_seed(seed)
    return mask_tokens(tokens, vocab=VOCAB, mask_id=MASK, generator=g, special_ids=SPECIAL, **kwargs)


@pytest.mark.parametrize("seed", SEEDS)
def test_mask_proportions_are_binomial(seed):
    tokens = _tokens(seed)
    inputs, labels = _mask(tokens, seed)
    ordinary = tokens >= 4
    chosen = labels != -100
    n, m = int(ordinary.sum()), int(chosen.sum())
    assert _within(m, n, 0.15)
    masked = int((inputs[chosen] == MASK).sum())
    kept = int((inputs[chosen] == tokens[chosen]).sum())
    # a random replacement hits [MASK] or the original token with probability 1/VOCAB each
    assert _within(masked, m, 0.8 + 0.1 / VOCAB)
    assert _within(kept, m, 0.1 + 0.1 / VOCAB)
    assert _within(m - masked - kept, m, 0.1 * (1 - 2 / VOCAB))


def test_labels_and_untouched_tokens():
    tokens = _tokens()
    inputs, labels = _mask(tokens, 0)
    chosen = labels != -100
    assert torch.equal(labels[chosen], tokens[chosen])  # label = the original token
    assert torch.equal(inputs[~chosen], tokens[~chosen])  # tokens not chosen are never changed
    assert inputs.dtype == tokens.dtype and labels.dtype == tokens.dtype
    assert int(inputs.min()) >= 0 and int(inputs.max()) < VOCAB


def test_special_tokens_are_never_chosen():
    tokens = _tokens()
    inputs, labels = _mask(tokens, 0, mask_prob=0.9)
    special = torch.isin(tokens, torch.tensor(SPECIAL))
    assert bool(special.any())
    assert bool((labels[special] == -100).all())
    assert torch.equal(inputs[special], tokens[special])
    ordinary = ~special
    assert _within(int((labels[ordinary] != -100).sum()), int(ordinary.sum()), 0.9)


def test_random_replacements_are_uniform_over_the_vocabulary():
    tokens = torch.full((200, 500), 500)  # one ordinary token everywhere
    inputs, labels = _mask(tokens, 0, mask_prob=1.0)
    replaced = inputs[(inputs != MASK) & (inputs != 500)].float()
    assert replaced.numel() > 5000
    sd = math.sqrt((VOCAB**2 - 1) / 12 / replaced.numel())  # standard error of a uniform mean
    assert abs(replaced.mean().item() - (VOCAB - 1) / 2) <= 4 * sd
    assert bool((labels == 500).all())


def test_same_seed_same_masks_and_other_seed_other_masks():
    tokens = _tokens()
    first, again, other = _mask(tokens, 7), _mask(tokens, 7), _mask(tokens, 8)
    assert torch.equal(first.inputs, again.inputs) and torch.equal(first.labels, again.labels)
    assert not torch.equal(first.labels, other.labels)


def test_ignore_index_and_zero_rate():
    tokens = _tokens()
    _, labels = _mask(tokens, 0, ignore_index=0)  # the seed's convention: 0, the padding id
    assert bool(((labels == 0) | (labels == tokens)).all()) and int((labels == 0).sum()) > 0
    inputs, labels = _mask(tokens, 0, mask_prob=0.0)
    assert torch.equal(inputs, tokens) and bool((labels == -100).all())


def test_mask_tokens_errors():
    g = torch.Generator().manual_seed(0)
    tokens = _tokens()
    with pytest.raises(ConfigError) as info:
        mask_tokens(tokens, vocab=VOCAB, mask_id=MASK, generator=g, mask_prob=1.5)
    assert str(info.value) == "mask_tokens: mask_prob=1.5 must be a probability in [0, 1]"
    with pytest.raises(ConfigError) as info:
        mask_tokens(tokens, vocab=VOCAB, mask_id=VOCAB, generator=g)
    assert str(info.value) == "mask_tokens: mask_id=1000 is not a token id in [0, vocab=1000)"
    with pytest.raises(ShapeError) as info:
        mask_tokens(tokens[0], vocab=VOCAB, mask_id=MASK, generator=g)
    assert str(info.value).splitlines()[0] == (
        'mask_tokens: tokens has 1 axes (200,), but "batch seq" needs 2'
    )


def _documents(count=60, seed=0):
    """Documents of 1 to 6 sentences, each sentence a distinct run of token ids."""
    g = torch.Generator().manual_seed(seed)
    sizes = torch.randint(1, 7, (count,), generator=g).tolist()
    next_id = iter(range(10**6))
    return [[torch.tensor([next(next_id) for _ in range(3)]) for _ in range(k)] for k in sizes]


def _doc_of(documents):
    return torch.tensor([d for d, doc in enumerate(documents) for _ in doc])


@pytest.mark.parametrize("seed", SEEDS)
def test_next_sentence_proportion_is_binomial(seed):
    documents = _documents(400, seed)
    pairs = next_sentence_pairs(documents, generator=torch.Generator().manual_seed(seed))
    n = len(pairs.first)
    assert n == sum(len(doc) - 1 for doc in documents)  # one pair per sentence with a successor
    assert _within(int(pairs.is_next.sum()), n, 0.5)


def test_next_sentence_labels_are_right():
    documents = _documents()
    pairs = next_sentence_pairs(documents, generator=torch.Generator().manual_seed(0))
    doc_of = _doc_of(documents)
    sentences = [s for doc in documents for s in doc]
    true_next = pairs.is_next == 1
    assert torch.equal(pairs.second_index[true_next], pairs.first_index[true_next] + 1)
    assert torch.equal(doc_of[pairs.second_index[true_next]], doc_of[pairs.first_index[true_next]])
    assert bool((doc_of[pairs.second_index[~true_next]] != doc_of[pairs.first_index[~true_next]]).all())
    for a, b, i, j in zip(pairs.first, pairs.second, pairs.first_index.tolist(), pairs.second_index.tolist()):
        assert a is sentences[i] and b is sentences[j]


def test_random_second_sentences_spread_over_the_other_documents():
    documents = [[torch.tensor([d, i]) for i in range(300)] for d in range(3)]  # three long documents
    pairs = next_sentence_pairs(documents, generator=torch.Generator().manual_seed(0), next_prob=0.0)
    assert not bool(pairs.is_next.any())
    doc_of = _doc_of(documents)
    own, other = doc_of[pairs.first_index], doc_of[pairs.second_index]
    assert bool((own != other).all())
    for d in range(3):  # each of the two other documents half the time
        from_d = other[own == d]
        assert _within(int((from_d == (d + 1) % 3).sum()), from_d.numel(), 0.5)
    within = pairs.second_index - 300 * other  # the sentence's position inside its document
    assert _within(int((within < 150).sum()), within.numel(), 0.5)


def test_next_sentence_pairs_reproducible_and_errors():
    documents = _documents()
    a = next_sentence_pairs(documents, generator=torch.Generator().manual_seed(3))
    b = next_sentence_pairs(documents, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a.is_next, b.is_next) and torch.equal(a.second_index, b.second_index)
    with pytest.raises(UsageError) as info:
        next_sentence_pairs(documents[:1] + [[]], generator=torch.Generator())
    assert str(info.value) == (
        "next_sentence_pairs: needs at least 2 non-empty documents to draw random sentences from"
    )
    with pytest.raises(ConfigError, match=r"^next_sentence_pairs: next_prob=-0.1 must be a probability"):
        next_sentence_pairs(documents, generator=torch.Generator(), next_prob=-0.1)


def test_pack_pairs_layout_and_truncation():
    documents = [[torch.tensor([10, 11, 12, 13, 14]), torch.tensor([20])], [torch.tensor([30, 31])]]
    pairs = next_sentence_pairs(documents, generator=torch.Generator().manual_seed(0), next_prob=1.0)
    packed = pack_pairs(pairs, cls_id=CLS, sep_id=SEP, pad_id=PAD, max_seq=7)
    assert packed.input_ids.tolist() == [[CLS, 10, 11, 12, SEP, 20, SEP]]  # the longer sentence trimmed
    assert packed.segment_ids.tolist() == [[0, 0, 0, 0, 0, 1, 1]]
    packed = pack_pairs(pairs._replace(first=[torch.tensor([5])]), cls_id=CLS, sep_id=SEP, max_seq=7)
    assert packed.input_ids.tolist() == [[CLS, 5, SEP, 20, SEP]]
    with pytest.raises(ConfigError, match=r"^pack_pairs: max_seq=4 must be at least 5"):
        pack_pairs(pairs, cls_id=CLS, sep_id=SEP, max_seq=4)


def test_pipeline_trains_bert_lm():
    """Pairs -> packed batch -> masked tokens -> BertLM -> both losses, with finite gradients."""
    documents = [[torch.randint(4, 50, (n,)) for n in (5, 7, 3)], [torch.randint(4, 50, (n,)) for n in (4, 6)]]
    g = torch.Generator().manual_seed(0)
    pairs = next_sentence_pairs(documents, generator=g)
    batch = pack_pairs(pairs, cls_id=CLS, sep_id=SEP, pad_id=PAD, max_seq=16)
    inputs, labels = mask_tokens(
        batch.input_ids, vocab=50, mask_id=MASK, generator=g, special_ids=SPECIAL, mask_prob=0.5
    )
    model = BertLM(BertConfig(vocab=50, d_model=16, layers=1, heads=2, d_ff=32, max_seq=16))
    nsp, mlm = model(inputs, batch.segment_ids, batch.attention_mask)
    loss = F.nll_loss(nsp, pairs.is_next) + F.nll_loss(mlm.transpose(1, 2), labels)  # ignore_index=-100
    loss.backward()
    assert torch.isfinite(loss)
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and bool(torch.isfinite(g).all()) for g in grads)
