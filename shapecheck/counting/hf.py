"""transformers models from a local config file, built on the meta device; no hub access.

``transformers`` is optional: imported here only, and its absence is one line. The class is
``transformers:ClassName`` or, with ``--config`` alone, the first entry of the config's
``architectures``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

import torch
from torch import nn

from shapecheck.errors import UsageError

PREFIX = "transformers:"


def _transformers() -> Any:
    try:
        import transformers
    except ImportError:
        raise UsageError("transformers is not installed; pip install transformers to report on a config") from None
    transformers.logging.set_verbosity_error()  # its deprecation notices are not the report's
    return transformers


def read_config(path: str) -> dict[str, Any]:
    if not os.path.isfile(path):
        raise UsageError(f"--config {path}: no such file")
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"--config {path}: not JSON ({str(error).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise UsageError(f"--config {path}: expected a JSON object, got {type(data).__name__}")
    return data


def _class(transformers: Any, name: str, path: str) -> Any:
    cls = getattr(transformers, name, None)
    if not isinstance(cls, type) or not issubclass(cls, nn.Module):
        raise UsageError(f"--config {path}: unknown architecture {name!r}; not a model class of transformers")
    return cls


def build(config_path: str, class_name: Optional[str] = None) -> tuple[nn.Module, str]:
    """The model ``config_path`` describes, on meta, and its label (``LlamaForCausalLM (config.json)``)."""
    data = read_config(config_path)
    transformers = _transformers()
    if class_name is None:
        names = data.get("architectures") or []
        if not names:
            raise UsageError(f"--config {config_path}: it names no 'architectures'; give the class as transformers:ClassName")
        class_name = names[0]
    cls = _class(transformers, class_name, config_path)
    config_class = getattr(cls, "config_class", None)
    if config_class is None:
        raise UsageError(f"--config {config_path}: {class_name} names no config class")
    try:
        config = config_class(**{k: v for k, v in data.items() if k != "model_type"})
    except (ValueError, KeyError, TypeError) as error:
        raise UsageError(f"--config {config_path}: {class_name}'s config rejects it: {str(error).splitlines()[0][:100]}") from None
    try:
        with torch.device("meta"):
            model = cls(config)
    except Exception as error:  # noqa: BLE001 - a config the class cannot build
        raise UsageError(f"--config {config_path}: {class_name} cannot be built from it: {str(error).splitlines()[0][:120]}") from None
    return model, f"{class_name} ({os.path.basename(config_path)})"


def config_dtype(model: nn.Module) -> Optional[str]:
    """The dtype the config declares (``torch_dtype``/``dtype``), as a name, if any."""
    config = getattr(model, "config", None)
    value = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    name = str(value).replace("torch.", "") if value is not None else None
    return name if name in ("float32", "float16", "bfloat16") else None
