"""Memory retrieval that picks the top-k memory blocks per head, either for every token or once per head (the max
over tokens): both paths set the head count the same way, so the later view of the (batch, heads, tokens, k)
indices only adds two unit axes for the gather."""

import torch
from torch import nn


class MemoryRetrieval(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads

    def forward(self, weights, past_keys, top_k, block, aggregate=None):
        bsz, _, q_len, _ = weights.shape
        if aggregate == "max_over_tokens":
            token_retrievers = 1
            head_retrievers = self.num_heads
            weights = weights.amax(dim=2, keepdim=True)
        elif aggregate is None:
            token_retrievers = q_len
            head_retrievers = self.num_heads
        else:
            raise NotImplementedError(aggregate)
        idx = weights.topk(dim=-1, k=top_k)[1].sort(dim=-1)[0].view(bsz, head_retrievers, token_retrievers, top_k)
        idx = idx.view(bsz, self.num_heads, token_retrievers, top_k, 1, 1).expand(
            bsz, self.num_heads, token_retrievers, top_k, block, self.head_dim)
        keys = past_keys.unsqueeze(2).expand(bsz, self.num_heads, token_retrievers, -1, block, self.head_dim)
        return keys.take_along_dim(idx, dim=3)
