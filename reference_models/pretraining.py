"""BERT's pre-training data (Devlin et al. 2019, section 3.1; seed 001's random_word / random_sent).

Both tasks draw every random number from an explicit ``torch.Generator``, so
the same seed gives the same batch, and run on whole tensors at once.

- ``mask_tokens``: masked-LM. Each non-special token is chosen with probability
  ``mask_prob`` (15%); a chosen token becomes ``mask_id`` with probability 0.8,
  a uniformly random vocabulary id with 0.1, and stays itself with 0.1. The
  label is the original token where chosen and ``ignore_index`` elsewhere (the
  seed uses 0, the padding id; -100 is what ``F.cross_entropy`` / ``nll_loss``
  ignore by default). One uniform draw u per token decides both, as in the seed:
  chosen when u < mask_prob, then u / mask_prob < 0.8 → [MASK], < 0.9 → random.
- ``next_sentence_pairs``: next-sentence prediction over documents of sentences.
  Every sentence that has a successor in its document starts one pair; with
  probability ``next_prob`` (50%) the second sentence is that successor (label
  1, "is next"), otherwise a random sentence of a *different* document (label 0),
  so a "random" second sentence is never the true next one by accident (the
  seed's ``get_random_line`` can return it; the released BERT data code also
  samples from another document).
- ``pack_pairs``: [CLS] A [SEP] B [SEP] with segment ids and a padding mask, the
  input ``BertLM`` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from jaxtyping import Int
from torch import Tensor

from shapecheck import checked
from shapecheck.errors import ConfigError, UsageError


class MaskedTokens(NamedTuple):
    inputs: Tensor  # (batch, seq): tokens with the chosen ones replaced
    labels: Tensor  # (batch, seq): the original token where chosen, ignore_index elsewhere


class SentencePairs(NamedTuple):
    first: list[Tensor]  # sentence A of each pair (1-D token ids)
    second: list[Tensor]  # sentence B of each pair
    is_next: Tensor  # (pairs,) int64: 1 when B follows A in its document, 0 when B is random
    first_index: Tensor  # (pairs,) index of A among all sentences, documents concatenated
    second_index: Tensor  # (pairs,) index of B among all sentences


class PackedPairs(NamedTuple):
    input_ids: Tensor  # (batch, seq): [CLS] A [SEP] B [SEP] then padding
    segment_ids: Tensor  # (batch, seq): 0 for [CLS] A [SEP], 1 for B [SEP], 0 for padding
    attention_mask: Tensor  # (batch, seq) bool: True on real tokens


def _require_rate(function: str, name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"{function}: {name}={value!r} must be a probability in [0, 1]")


def _require_id(function: str, name: str, value: int, vocab: int) -> None:
    if not 0 <= value < vocab:
        raise ConfigError(f"{function}: {name}={value} is not a token id in [0, vocab={vocab})")


@checked
def mask_tokens(
    tokens: Int[Tensor, "batch seq"],
    *,
    vocab: int,
    mask_id: int,
    generator: torch.Generator,
    mask_prob: float = 0.15,
    special_ids: Sequence[int] = (),
    ignore_index: int = -100,
) -> tuple[Int[Tensor, "batch seq"], Int[Tensor, "batch seq"]]:
    """Masked-LM inputs and labels: returns ``MaskedTokens(inputs, labels)``.

    Tokens whose id is in ``special_ids`` ([CLS], [SEP], padding) are never chosen.
    The random replacement is uniform over ``range(vocab)``, as in the seed and transformers.
    """
    _require_rate("mask_tokens", "mask_prob", mask_prob)
    _require_id("mask_tokens", "mask_id", mask_id, vocab)
    device = tokens.device
    u = torch.rand(tokens.shape, generator=generator, device=device)  # (batch, seq)
    random_ids = torch.randint(vocab, tokens.shape, generator=generator, device=device)  # (batch, seq)
    special = torch.isin(tokens, torch.tensor(list(special_ids), dtype=tokens.dtype, device=device))
    chosen = (u < mask_prob) & ~special  # (batch, seq)
    r = u / mask_prob if mask_prob > 0 else u  # uniform on [0, 1) given chosen
    inputs = torch.where(chosen & (r < 0.8), torch.full_like(tokens, mask_id), tokens)
    inputs = torch.where(chosen & (r >= 0.8) & (r < 0.9), random_ids.to(tokens.dtype), inputs)
    labels = torch.where(chosen, tokens, torch.full_like(tokens, ignore_index))
    return MaskedTokens(inputs, labels)


def next_sentence_pairs(
    documents: Sequence[Sequence[Tensor]],
    *,
    generator: torch.Generator,
    next_prob: float = 0.5,
) -> SentencePairs:
    """Next-sentence pairs from ``documents``, each a sequence of sentences (1-D token-id tensors).

    One pair per sentence that has a successor in its document, in corpus order
    (seed 001's ``random_sent(index)`` for every index). Needs at least two
    documents, so that a random second sentence can come from another one.
    """
    _require_rate("next_sentence_pairs", "next_prob", next_prob)
    lengths = torch.tensor([len(doc) for doc in documents], dtype=torch.long)
    if int((lengths > 0).sum()) < 2:
        raise UsageError("next_sentence_pairs: needs at least 2 non-empty documents to draw random sentences from")
    sentences = [sentence for doc in documents for sentence in doc]
    starts = torch.cumsum(lengths, 0) - lengths  # (docs,) index of each document's first sentence
    doc_of = torch.repeat_interleave(torch.arange(len(lengths)), lengths)  # (sentences,)
    index = torch.arange(len(sentences))
    first = index[index + 1 < (starts + lengths)[doc_of]]  # (pairs,) sentences with a successor
    pairs = first.numel()
    is_next = (torch.rand(pairs, generator=generator) < next_prob).long()  # (pairs,)
    other = _other_document(doc_of[first], lengths, generator)  # (pairs,)
    pick = (torch.rand(pairs, generator=generator) * lengths[other]).long()  # (pairs,) sentence within it
    second = torch.where(is_next.bool(), first + 1, starts[other] + pick)
    return SentencePairs(
        [sentences[i] for i in first.tolist()], [sentences[i] for i in second.tolist()], is_next, first, second
    )


def _other_document(own: Tensor, lengths: Tensor, generator: torch.Generator) -> Tensor:
    """For each entry of ``own``, a document other than it, uniform over the non-empty ones."""
    candidates = torch.nonzero(lengths > 0).flatten()  # (nonempty,)
    slot = torch.searchsorted(candidates, own)  # (pairs,) position of own among the candidates
    draw = (torch.rand(own.numel(), generator=generator) * (candidates.numel() - 1)).long()  # (pairs,)
    return candidates[draw + (draw >= slot).long()]  # skip over the own document


def pack_pairs(
    pairs: SentencePairs, *, cls_id: int, sep_id: int, pad_id: int = 0, max_seq: int = 512
) -> PackedPairs:
    """[CLS] A [SEP] B [SEP], padded to the longest pair; the longer sentence is trimmed to fit ``max_seq``."""
    if max_seq < 5:
        raise ConfigError(f"pack_pairs: max_seq={max_seq} must be at least 5 ([CLS] a [SEP] b [SEP])")
    rows = [_pack_one(a, b, cls_id, sep_id, max_seq) for a, b in zip(pairs.first, pairs.second)]
    seq = max((len(ids) for ids, _ in rows), default=0)
    input_ids = torch.full((len(rows), seq), pad_id, dtype=torch.long)
    segment_ids = torch.zeros((len(rows), seq), dtype=torch.long)
    attention_mask = torch.zeros((len(rows), seq), dtype=torch.bool)
    for row, (ids, segments) in enumerate(rows):
        input_ids[row, : len(ids)] = ids
        segment_ids[row, : len(ids)] = segments
        attention_mask[row, : len(ids)] = True
    return PackedPairs(input_ids, segment_ids, attention_mask)


def _pack_one(a: Tensor, b: Tensor, cls_id: int, sep_id: int, max_seq: int) -> tuple[Tensor, Tensor]:
    keep_a, keep_b = len(a), len(b)
    while keep_a + keep_b > max_seq - 3:  # trim the longer one, as BERT's truncate_seq_pair
        if keep_a > keep_b:
            keep_a -= 1
        else:
            keep_b -= 1
    cls, sep = torch.tensor([cls_id]), torch.tensor([sep_id])
    ids = torch.cat([cls, a[:keep_a].long(), sep, b[:keep_b].long(), sep])
    segments = torch.cat([torch.zeros(keep_a + 2, dtype=torch.long), torch.ones(keep_b + 1, dtype=torch.long)])
    return ids, segments
