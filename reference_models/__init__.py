"""Reference implementations of every module in the source posts, shape-annotated and checked."""

from reference_models.attention import (
    AttentionConfig,
    MultiHeadAttention,
    ScaledDotProductAttention,
    scaled_dot_product_attention,
)

__all__ = [
    "AttentionConfig",
    "MultiHeadAttention",
    "ScaledDotProductAttention",
    "scaled_dot_product_attention",
]
