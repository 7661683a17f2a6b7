"""A sampler for a model conditioned on a context: when the caller gives no context mask it builds one that keeps
every context position and passes it on, but the line passing it on sits inside that branch, so a mask the caller
gives is dropped and padded context positions are attended."""

import torch
from torch import nn


class Sampler(nn.Module):
    def __init__(self, net, max_len):
        super().__init__()
        self.net = net
        self.max_len = max_len

    @torch.no_grad()
    def generate(self, tokens, steps, **kwargs):
        context_mask = kwargs.pop("context_mask", None)
        if "context" in kwargs and context_mask is None:
            context = kwargs["context"]
            context_mask = torch.ones(context.shape[:2], dtype=torch.bool, device=tokens.device)
            kwargs.update(context_mask=context_mask)  # expect: SC137
        for _ in range(steps):
            logits = self.net(tokens[:, -self.max_len:], **kwargs)[:, -1]
            tokens = torch.cat((tokens, logits.argmax(-1, keepdim=True)), dim=-1)
        return tokens
