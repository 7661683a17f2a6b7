"""Inputs for one forward pass of any model, read from its forward signature; the output tensor to differentiate.

Language models (a first argument named like token ids) get ``(batch, seq)`` token ids;
vision models an image: of the config's size (``pixel_values``), else of the size a convolution stem
declares (``shapecheck.images``); encoder-decoders
(``config.is_encoder_decoder``) decoder token ids too; anything else, a block, gets hidden
states ``(batch, seq, d_model)`` with ``d_model`` read off its first Linear or recognised part, called as
the convention probe decided (``shapecheck.convention``: layout, self- or cross-attention, required masks
and positional inputs) where it could decide, else as the signature names them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import torch
from torch import nn

from shapecheck.auditing.projections import as_projection, is_linear
from shapecheck.errors import UsageError
from shapecheck.images import image_input
from shapecheck.target import forward_parameters
from shapecheck.vocabulary import forward_role

TOKEN_NAMES = ("input_ids", "idx", "ids", "tokens", "token_ids", "input_tokens", "src_tokens")


def _first_argument(module: nn.Module) -> Optional[str]:
    params = forward_parameters(module) or []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return positional[0].name if positional else None


def model_width(module: nn.Module) -> int:
    """The width a block reads: its config's hidden size, else its first Linear's input features."""
    config = getattr(module, "config", None)
    for name in ("hidden_size", "d_model", "n_embd", "dim"):
        value = getattr(config, name, None) or getattr(module, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    for sub in module.modules():
        if is_linear(sub):
            return as_projection("", sub).d_in
    raise UsageError(f"{type(module).__name__}: cannot tell the width of its input (no Linear, no hidden_size)")


def takes_tokens(module: nn.Module) -> bool:
    name = _first_argument(module)
    return name in TOKEN_NAMES or (name in ("x", "input", "src") and _embeds_first(module))


def _embeds_first(module: nn.Module) -> bool:
    first = next((m for m in module.modules() if isinstance(m, (nn.Embedding, nn.Linear))), None)
    return isinstance(first, nn.Embedding)


def make_inputs(module: nn.Module, batch: int, seq: int, device: str, grad: bool = False) -> tuple[tuple, dict]:
    """(args, kwargs) for ``module(*args, **kwargs)``: see the module docstring."""
    from shapecheck.convention import decide

    config = getattr(module, "config", None)
    dev = torch.device(device)
    if _first_argument(module) == "pixel_values":
        size = getattr(config, "image_size", 224)
        channels = getattr(config, "num_channels", 3)
        return (), {"pixel_values": torch.zeros(batch, channels, size, size, device=dev, requires_grad=grad)}
    image = image_input(module)
    if image is not None:  # a convolution stem (timm, vit-pytorch): an image at the module's declared size
        return (torch.zeros(batch, *image, device=dev, requires_grad=grad),), {}
    if takes_tokens(module):
        ids = torch.zeros(batch, seq, dtype=torch.long, device=dev)
        kwargs: dict[str, Any] = {}
        if config is not None and getattr(config, "is_encoder_decoder", False):
            kwargs["decoder_input_ids"] = ids
        return (ids,), kwargs
    decision = decide(module)
    if decision.runs:  # the probed convention: layout, self/cross, required masks and positional inputs
        return (), decision.call(module, batch, seq, device, grad=grad)
    hidden = torch.zeros(batch, seq, model_width(module), device=dev, requires_grad=grad)
    return (hidden,), _other_tensors(module, hidden)


def _other_tensors(module: nn.Module, hidden: torch.Tensor) -> dict[str, Any]:
    """Self-attention: every other required argument with the role of key, value or memory gets the same states."""
    params = (forward_parameters(module) or [])[1:]
    shared = {"key", "value", "memory"}
    return {p.name: hidden for p in params if p.default is p.empty and p.kind is not p.VAR_POSITIONAL
            and p.kind is not p.VAR_KEYWORD and forward_role(p.name) in shared}


def output_tensor(out: Any) -> torch.Tensor:
    """The tensor a loss would be computed from: logits, the last hidden state, or the first tensor."""
    if isinstance(out, torch.Tensor):
        return out
    for name in ("logits", "last_hidden_state"):
        value = getattr(out, name, None)
        if isinstance(value, torch.Tensor):
            return value
    items = out.values() if isinstance(out, dict) else out if isinstance(out, (tuple, list)) else ()
    for item in items:
        if isinstance(item, torch.Tensor) and item.is_floating_point():
            return item
    raise UsageError(f"the model's forward returned {type(out).__name__} with no floating-point tensor to differentiate")


def _floating(out: Any, found: dict[int, torch.Tensor], depth: int = 0) -> None:
    if isinstance(out, torch.Tensor):
        if out.is_floating_point() and out.requires_grad:
            found.setdefault(id(out), out)
    elif depth < 4 and isinstance(out, dict):
        for item in out.values():
            _floating(item, found, depth + 1)
    elif depth < 4 and isinstance(out, (tuple, list)):
        for item in out:
            _floating(item, found, depth + 1)


def outputs(out: Any) -> list[torch.Tensor]:
    """Every floating-point tensor the forward returned that a loss can differentiate (each once)."""
    found: dict[int, torch.Tensor] = {}
    _floating(out, found)
    return list(found.values())


def training_loss(out: Any) -> torch.Tensor:
    """A scalar whose backward reaches every part the forward used: the sum of every floating-point output.

    A model trained on one output alone leaves parts without a backward (BERT's pooler when only the last
    hidden state is differentiated); a training step trains what the model returns (BERT's pooler feeds
    next-sentence prediction), so every returned tensor takes part, as a formula of 3 × forward assumes.
    """
    found = outputs(out)
    if not found:
        return output_tensor(out).float().sum()
    loss = found[0].float().sum()
    for tensor in found[1:]:
        loss = loss + tensor.float().sum()
    return loss


def runner(module: nn.Module, batch: int, seq: int, device: str, grad: bool = False) -> Callable[[], Any]:
    args, kwargs = make_inputs(module, batch, seq, device, grad)
    return lambda: module(*args, **kwargs)
