"""The one validator for a config.json given to ``--config``: read with limits, checked before anything is built.

``check_config_file(path)`` returns the parsed object or raises ``UsageError`` with one line naming the
field and its value (``--config c.json: num_attention_heads is 0; it must be a positive integer up to 16,384``):

- readable: a regular file (not a FIFO or device), at most ``MAX_BYTES``, UTF-8 JSON, an object, nested at most
  ``MAX_DEPTH`` deep, no NaN or infinity anywhere;
- ``architectures``: a list of class names (strings);
- sizes: a field whose name carries a size role in ``shapecheck.vocabulary`` (``hidden_size`` is d_model,
  ``num_hidden_layers`` is layers ...) is null or an integer within ``options.SIZE_LIMITS`` of its role;
- divisibility: kv heads divide heads;
- nested configs (``text_config``, ``vision_config``) are checked the same way, named by their path.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Optional

from shapecheck.cli.options import SIZE_LIMITS
from shapecheck.errors import UsageError
from shapecheck.reading import Unreadable, read_bounded
from shapecheck.vocabulary import constructor_role

MAX_BYTES = 16 * 2**20  # released config.json files are a few KB
MAX_DEPTH = 32  # nesting of objects and lists
CAN_BE_ZERO = ("window", "rotary_dim", "d_head")  # 0 means "none" / "derived" (sliding_window 0, head_dim 0)


def check_config_file(path: str) -> dict[str, Any]:
    """The config at ``path``, parsed and checked; any problem is one ``UsageError`` line."""
    data = _parse(path, _read(path))
    if not isinstance(data, dict):
        raise UsageError(f"--config {path}: expected a JSON object, got {type(data).__name__}")
    _check_depth(path, data)
    _check_object(path, data, "")
    return data


def _read(path: str) -> str:
    if not os.path.lexists(path):
        raise UsageError(f"--config {path}: no such file")
    try:
        raw = read_bounded(path, MAX_BYTES)
    except Unreadable as problem:
        if problem.kind == "directory":
            raise UsageError(f"--config {path}: a directory; give a config.json file") from None
        if problem.kind == "special":
            raise UsageError(f"--config {path}: not a regular file ({problem.detail}); give a config.json file") from None
        if problem.kind == "too large":
            raise UsageError(f"--config {path}: more than a config file holds ({MAX_BYTES:,} bytes at most)") from None
        raise UsageError(f"--config {path}: cannot read it ({problem.detail})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"--config {path}: not UTF-8 text (byte {error.start})") from None


def _parse(path: str, text: str) -> Any:
    if _deeper_than(text, MAX_DEPTH):
        raise UsageError(f"--config {path}: nested more than {MAX_DEPTH} levels deep; not a model config")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"--config {path}: not JSON ({str(error).splitlines()[0]})") from None
    except RecursionError:
        raise UsageError(f"--config {path}: nested too deep to read; not a model config") from None


def _deeper_than(text: str, limit: int) -> bool:
    """Whether brackets outside strings nest deeper than ``limit`` (checked before parsing, which recurses)."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _check_depth(path: str, data: Any, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise UsageError(f"--config {path}: nested more than {MAX_DEPTH} levels deep; not a model config")
    children = data.values() if isinstance(data, dict) else data if isinstance(data, list) else ()
    for child in children:
        _check_depth(path, child, depth + 1)


def _check_object(path: str, data: dict[str, Any], prefix: str) -> None:
    if data.get("architectures") is not None and not _strings(data["architectures"]):
        raise UsageError(f"--config {path}: {prefix}architectures is {_shown(data['architectures'])}; "
                         "it must be a list of class names such as [\"LlamaForCausalLM\"]")
    roles: dict[str, tuple[str, int]] = {}
    for name, value in data.items():
        field = f"{prefix}{name}"
        if isinstance(value, dict):
            _check_object(path, value, f"{field}.")
            continue
        _check_finite(path, field, value)
        role = constructor_role(name) if isinstance(name, str) else None
        if role in SIZE_LIMITS and value is not None:
            roles.setdefault(role, (field, _size(path, field, role, value)))
    _check_divisibility(path, roles)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) and item for item in value)


def _check_finite(path: str, field: str, value: Any) -> None:
    """No NaN or infinity (JSON's non-standard ``NaN``/``Infinity``), however deep in lists and objects."""
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"--config {path}: {field} is {value}; a config value must be a finite number")
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        _check_finite(path, f"{field}[{key!r}]" if isinstance(value, list) else f"{field}.{key}", child)


def _size(path: str, field: str, role: str, value: Any) -> int:
    """A size field's value, checked: an integer from 1 (0 where it means none) up to its role's bound."""
    items = value if isinstance(value, list) else [value]  # per-layer sizes (attention_window: [512, 512, ...])
    low, high = (0 if role in CAN_BE_ZERO else 1), SIZE_LIMITS[role]
    for item in items:
        if isinstance(item, float) and item.is_integer():
            item = int(item)  # 1200.0, as some configs write it
        if not isinstance(item, int) or isinstance(item, bool) or not low <= item <= high:
            words = "a non-negative" if low == 0 else "a positive"
            raise UsageError(f"--config {path}: {field} is {_shown(value)}; it must be {words} integer up to {high:,} "
                             f"(the bound on {role})")
    return int(max(items)) if items else 0


def _check_divisibility(path: str, roles: dict[str, tuple[str, int]]) -> None:
    """Key/value heads are shared by whole groups of query heads. (d_model need not divide by heads: the
    config class may give a head size of its own, as GLM-4.5's and Qwen3-Omni's do.)"""
    heads, kv_heads = roles.get("heads"), roles.get("kv_heads")
    if heads and kv_heads and heads[1] % kv_heads[1]:
        raise UsageError(f"--config {path}: {heads[0]}={heads[1]:,} is not a multiple of {kv_heads[0]}={kv_heads[1]:,}")


def _shown(value: Any) -> Optional[str]:
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
