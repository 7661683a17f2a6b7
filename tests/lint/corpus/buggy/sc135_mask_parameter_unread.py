"""An encoder that runs its layer at a lower frame rate: it takes the attention mask and the key padding mask, but
passes the attention mask for both, so the padded frames are attended."""

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
        src = self.layer(
            src,
            src_mask=mask,
            src_key_padding_mask=mask,  # expect: SC135
        )
        return src.repeat_interleave(self.factor, dim=1)
