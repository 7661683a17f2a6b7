"""Context-query attention (reading comprehension): one similarity S of shape (batch, Lc, Lq), masked by a helper and
normalised over the query words (dim=2) and over the context words (dim=1) on purpose; both are used."""

import torch
import torch.nn.functional as F
from torch import nn


def mask_logits(scores, mask):
    return scores * mask + (1 - mask) * -1e30


class ContextQueryAttention(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.w_c = nn.Parameter(torch.randn(d_model, 1) * d_model ** -0.5)
        self.w_q = nn.Parameter(torch.randn(d_model, 1) * d_model ** -0.5)
        self.w_cq = nn.Parameter(torch.randn(1, 1, d_model) * d_model ** -0.5)

    def similarity(self, C, Q):
        batch, Lc, d = C.shape
        batch, Lq, d = Q.shape
        by_context = torch.matmul(C, self.w_c).expand(-1, -1, Lq)
        by_query = torch.matmul(Q, self.w_q).transpose(1, 2).expand(-1, Lc, -1)
        return by_context + by_query + torch.matmul(C * self.w_cq, Q.transpose(1, 2))  # (batch, Lc, Lq)

    def forward(self, C, Q, c_mask, q_mask):
        batch, Lc, d = C.shape
        batch, Lq, d = Q.shape
        S = self.similarity(C, Q)
        S1 = F.softmax(mask_logits(S, q_mask.view(batch, 1, Lq)), dim=2)
        S2 = F.softmax(mask_logits(S, c_mask.view(batch, Lc, 1)), dim=1)
        A = torch.bmm(S1, Q)
        B = torch.bmm(torch.bmm(S1, S2.transpose(1, 2)), C)
        return torch.cat([C, A, C * A, C * B], dim=2)
