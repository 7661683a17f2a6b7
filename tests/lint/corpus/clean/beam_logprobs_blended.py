"""One step of a beam search: the word log-probabilities are a log-softmax of the decoder's logits, not of query-key
scores, and finished beams keep their old score through a blend with the sequence mask, not an attention mask."""

import torch
import torch.nn.functional as F


def beam_step(logit: torch.Tensor, seq_logprob: torch.Tensor, seq_mask: torch.Tensor) -> torch.Tensor:
    word_logprob = F.log_softmax(logit, dim=-1)
    candidate_logprob = seq_logprob + word_logprob
    old_seq_logprob = seq_logprob.expand_as(candidate_logprob).contiguous()
    candidate_logprob = seq_mask * candidate_logprob + old_seq_logprob * (1 - seq_mask)
    return candidate_logprob
