"""Rotary embeddings whose subclasses call the base's ``__init__`` with an older signature (lorax 5e68edd4: the base
gained parameters, ``super().__init__(inv_freq, scaling_factor)`` was not updated), defined inside a ``try:`` block
as that file does: building either subclass raises TypeError."""

import torch
import torch.nn as nn

try:
    class RotaryEmbedding(nn.Module):
        def __init__(self, inv_freq, scaling_factor, max_positions, device=None):
            super().__init__()
            self.scaling_factor = scaling_factor
            positions = torch.arange(max_positions, device=device, dtype=torch.float32) / scaling_factor
            freqs = torch.outer(positions, inv_freq)
            self.register_buffer("cos", freqs.cos(), persistent=False)
            self.register_buffer("sin", freqs.sin(), persistent=False)

        def forward(self, x, offset=0):
            n, half = x.shape[-2], x.shape[-1] // 2
            cos, sin = self.cos[offset:offset + n], self.sin[offset:offset + n]
            x1, x2 = x[..., :half], x[..., half:]
            return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)

    class LinearScaledRotary(RotaryEmbedding):
        def __init__(self, dim, max_positions, base=10000.0, scaling_factor=1.0):
            inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
            super().__init__(inv_freq, scaling_factor)  # expect: SC186

    class DynamicRotary(LinearScaledRotary):
        def __init__(self, dim, max_positions, base=10000.0):
            super(DynamicRotary, self).__init__(dim, max_positions, base, 1.0, "dynamic")  # expect: SC186
except ImportError:
    pass
