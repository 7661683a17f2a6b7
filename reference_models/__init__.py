"""Reference implementations of every module in the source posts, shape-annotated and checked."""

from reference_models.attention import (
    AttentionConfig,
    MultiHeadAttention,
    ScaledDotProductAttention,
    scaled_dot_product_attention,
)

# Each family's module is imported as reference_models.<family> (bert, layers, pretraining,
# transformer, packed, gpt2); the attention primitives are re-exported here.

__all__ = [
    "AttentionConfig",
    "MultiHeadAttention",
    "ScaledDotProductAttention",
    "scaled_dot_product_attention",
]
