"""Which attention projections carry a bias, as a block's config or its family declares it.

A config declares biases with one flag (``attention_bias``: all four projections;
``qkv_bias``: q, k and v; ``bias``/``enable_bias``/``use_bias``: all four). Some
families fix the convention in code instead: Whisper's key projection has no bias
(Radford et al. 2022, the OpenAI release), Qwen2's q/k/v have biases and its output
projection has none (Qwen2 technical report, section 2.1). Roles nobody declares
follow the block's majority (``expected.py``).

    >>> declared_biases(whisper.encoder.layers[0].self_attn, whisper.config)
    ({'k': False}, 'the Whisper family')
"""

from __future__ import annotations

from typing import Any, Optional

ROLES = ("q", "k", "v", "o")

# config flag -> the roles it sets
CONFIG_FLAGS: dict[str, tuple[str, ...]] = {
    "attention_bias": ROLES, "qkv_bias": ("q", "k", "v"), "bias": ROLES, "enable_bias": ROLES, "use_bias": ROLES,
}

# class-name prefix of the attention block -> its family's fixed convention
FAMILY_BIASES: dict[str, dict[str, bool]] = {
    "Whisper": {"k": False},
    "Qwen2": {"q": True, "k": True, "v": True, "o": False},
}


def _family(block: Any) -> Optional[tuple[dict[str, bool], str]]:
    name = type(block).__name__
    for prefix, biases in FAMILY_BIASES.items():
        if name.startswith(prefix) and not name.startswith(prefix + "Moe"):
            return dict(biases), f"the {prefix} family"
    return None


def declared_biases(block: Any, config: Any) -> tuple[dict[str, bool], str]:
    """(role -> has a bias, who declared it) for the roles declared; ``({}, "")`` when nothing is."""
    for flag, roles in CONFIG_FLAGS.items():
        value = getattr(config, flag, None) if config is not None else None
        if isinstance(value, bool):
            return {role: value for role in roles}, f"config.{flag}={value}"
    return _family(block) or ({}, "")
