"""A sequence-first encoder layer in fairseq's conventions: (T, B, C) tensors, embed_dim and a key_padding_mask (True = pad)."""
from torch import nn


class TransformerEncoderLayer(nn.Module):
    def __init__(self, embed_dim, attention_heads, ffn_embed_dim=None, dropout=0.1):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(embed_dim, attention_heads, dropout=dropout)
        self.norm = nn.LayerNorm(embed_dim)
        self.fc1, self.fc2 = nn.Linear(embed_dim, ffn_embed_dim or 4 * embed_dim), nn.Linear(ffn_embed_dim or 4 * embed_dim, embed_dim)

    def forward(self, x, encoder_padding_mask=None):
        residual = x  # (T, B, C)
        x, _ = self.self_attn(x, x, x, key_padding_mask=encoder_padding_mask, need_weights=False)
        x = self.norm(residual + x)
        return self.norm(x + self.fc2(self.fc1(x).relu()))
