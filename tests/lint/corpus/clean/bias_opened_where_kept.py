"""A dense additive attention bias built for a custom decoding pattern: it starts at the dtype's minimum everywhere
(nothing visible) and the causal mask, True where a query may look, opens those places by filling them with 0."""

import torch


def prompt_bias(prompt_length: int, total: int, dtype=torch.bfloat16, device=None) -> torch.Tensor:
    bias = torch.full((1, 1, total, total), torch.finfo(dtype).min, dtype=dtype, device=device)
    causal_mask = torch.tril(torch.ones((prompt_length, prompt_length), dtype=torch.bool, device=device))
    bias[:, :, :prompt_length, :prompt_length].masked_fill_(causal_mask.view(1, 1, prompt_length, prompt_length), 0.0)
    for q in range(prompt_length, total):
        bias[:, 0, q, : q + 1] = 0.0
    return bias
