"""A beam search whose finished beams stop adding word scores: the word log-probabilities are gated by the sequence
mask, and the candidates are a blend of the new and the old scores, written as arithmetic. Neither product is an
additive attention mask: each multiplies a tracked tensor that is no mask."""

import torch
import torch.nn.functional as F


class BeamSearch:
    def __init__(self, model, max_len: int, eos: int):
        self.model, self.max_len, self.eos = model, max_len, eos

    def search(self, batch: int, beams: int) -> torch.Tensor:
        seq_logprob = torch.zeros((batch, 1, 1))
        seq_mask = torch.ones((batch, beams, 1))
        words = torch.zeros(batch, beams, dtype=torch.long)
        for t in range(self.max_len):
            word_logprob = F.log_softmax(self.model(words), dim=-1)
            word_logprob = word_logprob.view(batch, beams, -1)
            candidate_logprob = seq_logprob + word_logprob
            if t > 0:
                seq_mask = seq_mask * (words != self.eos).float().unsqueeze(-1)
                old_seq_logprob = seq_logprob.expand_as(candidate_logprob).contiguous()
                old_seq_logprob[:, :, : self.eos] = -999
                candidate_logprob = seq_mask * candidate_logprob + old_seq_logprob * (1 - seq_mask)
            best, index = candidate_logprob.view(batch, -1).topk(beams, dim=-1)
            words = index % candidate_logprob.shape[-1]
            seq_logprob = best.unsqueeze(-1)
        return seq_logprob
