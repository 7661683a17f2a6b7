"""Property-based testing of attention modules (``shapecheck verify``).

    from shapecheck.testing import check_attention
    check_attention(MyAttention)            # raises AssertionError with the minimal failing configuration

``strategies`` draws attention inputs, ``adapt`` calls real modules, ``properties``
holds the invariants and ``runner`` runs them under hypothesis.
"""

from shapecheck.testing.runner import PropertyResult, VerifyReport, check_attention, format_failure, verify
from shapecheck.testing.strategies import AttentionCase, AttentionShape, attention_cases, attention_shapes, key_masks
from shapecheck.testing.subject import VerifyOptions

__all__ = [
    "AttentionCase",
    "AttentionShape",
    "PropertyResult",
    "VerifyOptions",
    "VerifyReport",
    "attention_cases",
    "attention_shapes",
    "check_attention",
    "format_failure",
    "key_masks",
    "verify",
]
