"""An encoder that runs its layer at a lower frame rate: it takes the attention mask and the key padding mask, and
passes each, downsampled like the frames, where it belongs."""

from torch import nn


class DownsampledEncoder(nn.Module):
    def __init__(self, d_model, n_heads, factor):
        super().__init__()
        self.factor = factor
        self.layer = nn.TransformerEncoderLayer(d_model, n_heads, dim_feedforward=2 * d_model, dropout=0.0,
                                                batch_first=True)

    def forward(self, src, mask=None, src_key_padding_mask=None):
        src = src[:, ::self.factor]
        if mask is not None:
            mask = mask[::self.factor, ::self.factor]
        if src_key_padding_mask is not None:
            src_key_padding_mask = src_key_padding_mask[:, ::self.factor]
        src = self.layer(
            src,
            src_mask=mask,
            src_key_padding_mask=src_key_padding_mask,
        )
        return src.repeat_interleave(self.factor, dim=1)
