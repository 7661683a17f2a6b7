"""Load a user's attention module from ``file.py:Name`` or ``package.module:Name`` and build it.

Used by ``shapecheck verify``, ``prove`` and ``audit``::

    target = load_target("my_attn.py:MyAttention")
    module, construction = build(target, d_model=8, heads=2, dropout=0.1)
    construction.describe()   # 'MyAttention(embed_dim=8 [d_model], num_heads=2 [heads], ...)'

Constructor (or factory) parameters are mapped by name: widths in ``WIDTH_NAMES``
get ``d_model``, ``HEAD_NAMES`` get ``heads``, ``DROPOUT_NAMES`` get ``dropout``,
``BIAS_NAMES`` get ``bias``; a ``config`` parameter annotated with a dataclass or a
transformers ``PretrainedConfig`` (or any ``config`` of a transformers class) is
built from the same values. ``init={"name": value}`` (the CLI's ``--init``) fixes
any parameter. Every failure raises ``UsageError`` with a one-line message.
A file is imported from its path without writing bytecode next to it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import inspect
import os
import sys
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

from torch import nn

from shapecheck.errors import UsageError

WIDTH_NAMES = frozenset({"d_model", "embed_dim", "hidden_size", "hidden", "n_embd", "dim", "model_dim", "emb_size"})
INPUT_WIDTH_NAMES = frozenset({"d_in", "input_size", "input_dim"})  # an attention block's input width: d_model too
HEAD_NAMES = frozenset({"heads", "h", "num_heads", "n_heads", "n_head", "nhead", "num_attention_heads"})
DROPOUT_NAMES = frozenset({
    "dropout", "p", "attn_dropout", "attention_dropout", "att_dropout", "dropout_p", "dropout_rate",
    "attn_pdrop", "attention_probs_dropout_prob", "attn_drop", "drop", "attn_dropout_p",
})
BIAS_NAMES = frozenset({"bias", "use_bias", "qkv_bias", "proj_bias", "add_bias", "attn_bias"})
INIT_HINT = "give it with --init 'name=value,...'"


@dataclass(frozen=True)
class Target:
    """A resolved ``spec``: the class or factory ``obj`` found in ``source``."""

    spec: str  # as the user wrote it
    source: str  # the file path or module name
    name: str  # attribute path inside the module (may be dotted)
    obj: Any  # nn.Module subclass or factory function
    is_class: bool


@dataclass(frozen=True)
class Construction:
    """What ``build`` passed: ``arguments`` by parameter name and where each value came from."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # d_model | heads | dropout | bias | init | "config: fields"

    def describe(self) -> str:
        """``Name(h=2 [heads], d_model=8 [d_model])``: the call, each value tagged with its role."""
        parts = [f"{key}={_short(value)} [{self.sources[key]}]" for key, value in self.arguments.items()]
        return f"{self.name}({', '.join(parts)})"


def _short(value: Any) -> str:
    return type(value).__name__ + "(...)" if hasattr(value, "to_dict") or dataclasses.is_dataclass(value) else repr(value)


# ---------------------------------------------------------------- --init parsing


def parse_value(text: str) -> Any:
    """``'8'`` -> 8, ``'0.1'`` -> 0.1, ``'true'`` -> True, ``'none'`` -> None, anything else the string."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text.strip())
        except ValueError:
            pass
    return text.strip().strip("'\"")


def parse_init(text: Optional[str]) -> dict[str, Any]:
    """``'causal=true,bias=false'`` -> ``{'causal': True, 'bias': False}``."""
    result: dict[str, Any] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise UsageError(f"--init item {item.strip()!r} is not name=value (e.g. --init 'heads=2,bias=false')")
        result[name.strip()] = parse_value(value)
    return result


# ---------------------------------------------------------------- loading


def split_spec(spec: str) -> tuple[str, str]:
    """``'a/b.py:Name'`` -> ``('a/b.py', 'Name')``; the last colon separates the name."""
    source, sep, name = spec.rpartition(":")
    if not sep or not source or not name:
        raise UsageError(f"target {spec!r} is not path/to/file.py:Name or package.module:Name")
    return source, name


@contextlib.contextmanager
def _importing_from(directory: str) -> Iterator[None]:
    """Put ``directory`` on sys.path and write no bytecode next to the user's files."""
    old_path, old_flag = list(sys.path), sys.dont_write_bytecode
    sys.path.insert(0, directory)
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        sys.path[:], sys.dont_write_bytecode = old_path, old_flag


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def _import_file(path: str) -> Any:
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    absolute = os.path.abspath(path)
    module_name = "shapecheck_target_" + "".join(c if c.isalnum() else "_" for c in absolute)
    spec = importlib.util.spec_from_file_location(module_name, absolute)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look the module up by name
    try:
        with _importing_from(os.path.dirname(absolute)):
            spec.loader.exec_module(module)
    except BaseException as error:  # noqa: BLE001 - any failure in user code is a usage error
        sys.modules.pop(module_name, None)
        if isinstance(error, KeyboardInterrupt):
            raise
        raise UsageError(f"cannot import {path}: {_first_line(error)}") from None
    return module


def _import_module(name: str) -> Any:
    try:
        with _importing_from(os.getcwd()):
            return importlib.import_module(name)
    except BaseException as error:  # noqa: BLE001
        if isinstance(error, KeyboardInterrupt):
            raise
        raise UsageError(f"cannot import module {name}: {_first_line(error)}") from None


def _is_file(source: str) -> bool:
    return source.endswith(".py") or os.sep in source or "/" in source


def _module_classes(module: Any) -> list[str]:
    return sorted(
        name for name, value in vars(module).items()
        if inspect.isclass(value) and issubclass(value, nn.Module) and getattr(value, "__module__", "") == module.__name__
    )


def _resolve(module: Any, source: str, name: str) -> Any:
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            choices = ", ".join(_module_classes(module)) or "none"
            raise UsageError(f"{source} has no name {name!r} (nn.Module classes there: {choices})")
        obj = getattr(obj, part)
    return obj


def load_target(spec: str) -> Target:
    """Import ``spec``'s file or module and find its nn.Module class or factory function."""
    source, name = split_spec(spec)
    module = _import_file(source) if _is_file(source) else _import_module(source)
    obj = _resolve(module, source, name)
    if inspect.isclass(obj):
        if not issubclass(obj, nn.Module):
            raise UsageError(f"{spec}: {name} is a class but not a torch.nn.Module")
        return Target(spec, source, name, obj, True)
    if isinstance(obj, nn.Module):
        raise UsageError(f"{spec}: {name} is a module instance; give its class or a factory function")
    if callable(obj):
        return Target(spec, source, name, obj, False)
    raise UsageError(f"{spec}: {name} is a {type(obj).__name__}, not an nn.Module class or factory function")


# ---------------------------------------------------------------- building


def _parameters(target: Target) -> list[inspect.Parameter]:
    func = target.obj.__init__ if target.is_class else target.obj
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in params[1 if target.is_class else 0:] if p.kind in kinds]


def _role(name: str) -> Optional[str]:
    for role, names in (("d_model", WIDTH_NAMES | INPUT_WIDTH_NAMES), ("heads", HEAD_NAMES), ("dropout", DROPOUT_NAMES), ("bias", BIAS_NAMES)):
        if name in names:
            return role
    return None


def _config_classes(target: Target, param: inspect.Parameter) -> list[type]:
    """Classes to try for a ``config`` parameter: its annotation (each member of a Union), or a transformers config."""
    func = target.obj.__init__ if target.is_class else target.obj
    try:
        annotation = typing.get_type_hints(func).get(param.name, param.annotation)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to the raw one
        annotation = param.annotation
    members = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) else (annotation,)
    found = [m for m in members if inspect.isclass(m) and (dataclasses.is_dataclass(m) or hasattr(m, "to_dict"))]
    if found:
        return found
    module = sys.modules.get(getattr(target.obj, "__module__", ""))
    if module is None or not module.__name__.startswith("transformers."):
        return []
    from transformers import PretrainedConfig  # a transformers class: its module imports its config

    found = [v for v in vars(module).values() if inspect.isclass(v) and issubclass(v, PretrainedConfig) and v is not PretrainedConfig]
    return found[:1] if len(found) == 1 else []


def _config_values(config_class: type, values: dict[str, Any], init: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments for a config class: mapped sizes, then ``init`` overrides it accepts."""
    if dataclasses.is_dataclass(config_class):
        names = {f.name for f in dataclasses.fields(config_class)}
    else:
        names = set(inspect.signature(config_class.__init__).parameters) | set(values) | set(init)
    kwargs: dict[str, Any] = {}
    for name in sorted(names):
        role = _role(name) or ("dropout" if "dropout" in name else None)
        if role is not None and values.get(role) is not None:
            kwargs[name] = values[role]
    if not dataclasses.is_dataclass(config_class):
        kwargs.setdefault("hidden_dropout_prob", values.get("dropout") or 0.0)
    kwargs.update({k: v for k, v in init.items() if k in names or not dataclasses.is_dataclass(config_class)})
    return kwargs


def map_arguments(
    target: Target, *, d_model: int, heads: int, dropout: float = 0.0, bias: Optional[bool] = None,
    init: Optional[dict[str, Any]] = None,
) -> Construction:
    """Choose a value for every parameter of the constructor or factory (without calling it).

    Raises ``UsageError`` naming the first required parameter it cannot map.
    """
    init = dict(init or {})
    values = {"d_model": d_model, "heads": heads, "dropout": dropout, "bias": bias}
    arguments: dict[str, Any] = {}
    sources: dict[str, str] = {}
    params = _parameters(target)
    for param in params:
        name, role = param.name, _role(param.name)
        if name in init:
            arguments[name], sources[name] = init.pop(name), "init"
        elif role is not None and values[role] is not None:
            arguments[name], sources[name] = values[role], role
        elif role == "bias" and param.default is inspect.Parameter.empty:
            arguments[name], sources[name] = True, role
        elif name == "config" and (classes := _config_classes(target, param)):
            arguments[name], fields = _make_config(target, classes, values, init)
            sources[name] = "config: " + ", ".join(f"{k}={v!r}" for k, v in fields.items())
        elif param.default is inspect.Parameter.empty:
            raise UsageError(f"{target.spec}: cannot map required argument {name!r} of {target.name}; {INIT_HINT}")
    _check_leftover_init(target, params, init, arguments, sources)
    return Construction(target.name, arguments, sources)


def _make_config(target: Target, classes: list[type], values: dict[str, Any], init: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The first of ``classes`` that builds from the mapped values, and the fields it was given; ``init`` items it used are consumed."""
    failures = []
    for config_class in classes:
        kwargs = _config_values(config_class, values, init)
        try:
            config = config_class(**kwargs)
        except Exception as error:  # noqa: BLE001 - user config classes raise anything
            failures.append(f"{config_class.__name__} raised {_first_line(error)}")
            continue
        for key in kwargs:
            init.pop(key, None)
        if getattr(config, "_attn_implementation", "") is None:
            config._attn_implementation = "eager"  # a standalone transformers layer: the plain softmax path
        return config, kwargs
    raise UsageError(f"{target.spec}: building the config failed: {'; '.join(failures)}; {INIT_HINT}")


def _check_leftover_init(
    target: Target, params: list[inspect.Parameter], init: dict[str, Any], arguments: dict[str, Any], sources: dict[str, str]
) -> None:
    """``init`` names the signature lacks go through ``**kwargs`` when there is one, else fail."""
    if not init:
        return
    func = target.obj.__init__ if target.is_class else target.obj
    try:
        has_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        has_kwargs = True
    if not has_kwargs:
        known = ", ".join(p.name for p in params) or "none"
        raise UsageError(f"--init names {', '.join(sorted(init))}, which {target.name} does not take (parameters: {known})")
    for name, value in init.items():
        arguments[name], sources[name] = value, "init"


def build(
    target: Target, *, d_model: int, heads: int, dropout: float = 0.0, bias: Optional[bool] = None,
    init: Optional[dict[str, Any]] = None,
) -> tuple[nn.Module, Construction]:
    """Construct ``target`` with mapped arguments; returns the module and what was passed."""
    construction = map_arguments(target, d_model=d_model, heads=heads, dropout=dropout, bias=bias, init=init)
    try:
        module = target.obj(**construction.arguments)
    except Exception as error:  # noqa: BLE001 - user constructors raise anything
        raise UsageError(
            f"{target.spec}: constructing {construction.describe()} raised {_first_line(error)}; {INIT_HINT}"
        ) from None
    if not isinstance(module, nn.Module):
        raise UsageError(f"{target.spec}: factory {target.name} returned {type(module).__name__}, not an nn.Module")
    return module, construction


def factory_for(
    target: Target, *, dropout: float = 0.0, bias: Optional[bool] = None, init: Optional[dict[str, Any]] = None
) -> Callable[[int, int], nn.Module]:
    """A ``(d_model, heads) -> module`` function over ``target`` (what ``check_attention`` takes)."""

    def factory(d_model: int, heads: int) -> nn.Module:
        return build(target, d_model=d_model, heads=heads, dropout=dropout, bias=bias, init=init)[0]

    return factory
