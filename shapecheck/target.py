"""Load a user's attention module from ``file.py:Name`` or ``package.module:Name``, map its constructor by role, build it.

Shared by ``shapecheck verify``, ``audit``, ``prove`` and ``report``::

    target = load_target("my_attn.py:MyAttention")
    construction = map_arguments(target, {"d_model": 8, "heads": 2}, keep_defaults=True)
    module = construct(target, construction, device="meta")        # or "cpu"
    construction.describe()   # 'MyAttention(embed_dim=8 [d_model], num_heads=2 [heads], hidden=8 (default 1408) [d_model])'
    module, construction = build(target, {"d_model": 8, "heads": 2}, keep_defaults=False)   # both steps
    constraints = probe_constraints(target, init=init)              # head size multiple of 8, even, kv groups

- ``sizes`` maps roles (``shapecheck.vocabulary.CONSTRUCTOR_ROLES``: ``d_model heads kv_heads d_head
  d_ff rotary_dim dropout causal window max_seq bias layer_index``) to values. Missing sizes are derived
  (``d_head = d_model // heads``, ``kv_heads = heads``, ``d_ff = 4·d_model``) for required parameters only.
- ``keep_defaults=True`` (audit, prove, report): a parameter with a default keeps it unless its role is in
  ``explicit`` (what the user gave) or it is named in ``init``; required parameters get the role's value.
  ``keep_defaults=False`` (verify, which draws sizes): every role given in ``sizes`` replaces defaults.
  A replaced default is recorded (``Construction.replaced``) and ``describe()`` prints it: ``hidden=8 (default 1408)``.
  Ambiguous widths (``hidden``, ``hidden_dim``, ``input_dim`` ...) are ``d_model`` only when the signature has no
  unambiguous width, else ``d_ff``.
- Config objects (a ``config``/``args``/``cfg``/``params`` parameter): its annotated class (a dataclass,
  NamedTuple or transformers config), else a config-like class of the target's own module whose fields map
  (GPTConfig, ModelArgs), else the transformers config of the target's module, else an object answering each
  attribute the constructor reads by its role; construction failures name the attributes it could not answer.
- ``construct`` and ``build`` raise ``UsageError`` with one line; ``probe_constraints`` builds on the meta
  device to find the head sizes and kv-head groupings the constructor accepts and says which constraint it found.
- ``init={"name": value}`` (the CLI's ``--init 'name=value,...'``) fixes any parameter or config field.
  When parameters cannot be mapped, one line names each of them and the ``--init`` syntax.

A file is imported from its path without writing bytecode next to it.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib
import importlib.util
import inspect
import os
import signal
import sys
import textwrap
import threading
import types
import typing
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from torch import nn

from shapecheck.errors import UsageError, first_line
from shapecheck.vocabulary import AMBIGUOUS_WIDTHS, CONFIG_PARAMETERS, CONSTRUCTOR_ROLES, ROLE_FALLBACKS, constructor_role

HEAD_NAMES = CONSTRUCTOR_ROLES["heads"]  # read by shapecheck.auditing.recognize
INIT_HINT = "give it with --init 'name=value,...'"
_EMPTY = inspect.Parameter.empty


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
    """What to pass: ``arguments`` by parameter name, each value's source, and the defaults that were replaced."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # a role | "init" | "config: fields"
    replaced: dict[str, Any] = field(default_factory=dict)  # parameter (or config field) -> the default it replaced

    def describe(self) -> str:
        """``Name(h=2 [heads], hidden=8 (default 1408) [d_model])``: the call, each value tagged with its role."""
        parts = []
        for key, value in self.arguments.items():
            default = f" (default {self.replaced[key]!r})" if key in self.replaced else ""
            parts.append(f"{key}={_short(value)}{default} [{self.sources[key]}]")
        return f"{self.name}({', '.join(parts)})"


def _short(value: Any) -> str:
    if isinstance(value, RoleAnswers):
        return "RoleAnswers(...)"
    return type(value).__name__ + "(...)" if hasattr(value, "to_dict") or dataclasses.is_dataclass(value) or _is_namedtuple(value) else repr(value)


def _is_namedtuple(value: Any) -> bool:
    return isinstance(value, tuple) and hasattr(value, "_fields")


# ---------------------------------------------------------------- calling


def forward_parameters(module: nn.Module) -> Optional[list[inspect.Parameter]]:
    """``module.forward``'s named parameters (no ``*args``/``**kwargs``), or None when it has no readable signature."""
    try:
        params = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in params if p.kind in kinds]


# ---------------------------------------------------------------- the guard around user code


class Deadline(BaseException):
    """A call of user code ran past ``--timeout`` (a BaseException: the user's ``except Exception`` cannot swallow it)."""


@dataclass
class Guard:
    """What ``user_code`` saw: the pid that owns the report, the per-call deadline, a real Ctrl-C."""

    timeout: Optional[float] = None
    pid: int = field(default_factory=os.getpid)
    ctrl_c: bool = False
    depth: int = 0  # calls of user code in progress (the deadline covers the outermost)

    def require_not_interrupted_by_module(self, interrupted: bool) -> None:
        """An interrupted run that no Ctrl-C caused: the module raised KeyboardInterrupt itself."""
        if interrupted and not self.ctrl_c:
            raise UsageError("the module raised KeyboardInterrupt itself (no Ctrl-C was pressed); nothing was checked")


_ACTIVE: list[Guard] = []


@contextlib.contextmanager
def user_code(timeout: Optional[float] = None) -> Iterator[Guard]:
    """Run work that imports, constructs or calls the user's module; what that code does cannot end or garble ours.

    - whatever it prints (``print`` and writes to file descriptor 1) goes to stderr, so stdout holds only the report;
    - ``sys.exit`` becomes a one-line ``UsageError`` ("the module exited"), as does a ``KeyboardInterrupt`` it raises
      itself (a real Ctrl-C still propagates: ``Guard.ctrl_c``);
    - ``timeout``: each import, constructor call and outermost forward call gets that many seconds (``Deadline``);
    - a process the module forked ends silently here, so only the original process reports.
    ``os._exit`` cannot be caught in-process: the command line runs in a supervised child (``shapecheck.cli.main``).
    """
    if timeout is not None and not hasattr(signal, "setitimer"):
        raise UsageError("--timeout needs POSIX interval timers, which this platform lacks; run without it")
    guard = Guard(timeout)
    _ACTIVE.append(guard)
    main_thread = threading.current_thread() is threading.main_thread()
    restore = [_to_stderr()]
    if main_thread:
        restore.append(_record_ctrl_c(guard))
        if timeout is not None:
            restore.append(_forward_deadlines(guard))
    try:
        yield guard
    except SystemExit as error:
        _leave_if_forked(guard)
        raise UsageError(f"the module exited (sys.exit({error.code!r})) while shapecheck ran it; nothing was checked") from None
    except Deadline as error:
        _leave_if_forked(guard)
        raise UsageError(str(error)) from None
    except KeyboardInterrupt:
        _leave_if_forked(guard)
        guard.require_not_interrupted_by_module(True)
        raise
    finally:
        _leave_if_forked(guard)
        for undo in reversed(restore):
            undo()
        _ACTIVE.remove(guard)


def _leave_if_forked(guard: Guard) -> None:
    """A copy of this process made by ``os.fork`` in the user's code ends here, silently."""
    if os.getpid() != guard.pid:
        os._exit(0)


def _to_stderr() -> Callable[[], None]:
    """Send stdout (Python's and file descriptor 1) to stderr until the returned function is called."""
    saved_stream, saved_fd = sys.stdout, None
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    try:
        if sys.stdout.fileno() == 1 and sys.stderr.fileno() == 2:
            saved_fd = os.dup(1)
            os.dup2(2, 1)
    except (AttributeError, OSError, ValueError):  # a stream without a descriptor (typer's CliRunner, pytest)
        saved_fd = None
    sys.stdout = sys.stderr

    def undo() -> None:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)
        sys.stdout = saved_stream

    return undo


def _record_ctrl_c(guard: Guard) -> Callable[[], None]:
    """A SIGINT handler that notes a real Ctrl-C, then interrupts as Python's own does."""
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # ignored (a background job) or not set from Python: leave it
        return lambda: None

    def on_sigint(number: int, frame: Any) -> None:
        guard.ctrl_c = True
        previous(number, frame)

    signal.signal(signal.SIGINT, on_sigint)
    return lambda: signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def deadline(what: str) -> Iterator[None]:
    """``what`` (``the import``, ``the constructor``, ``forward``) gets the active guard's timeout, when it has one."""
    guard = _ACTIVE[-1] if _ACTIVE else None
    if guard is None or guard.timeout is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    _enter(guard, what)
    try:
        yield
    finally:
        _leave(guard)


def _enter(guard: Guard, what: str) -> None:
    guard.depth += 1
    if guard.depth == 1 and guard.timeout is not None:
        def expired(number: int, frame: Any) -> None:
            raise Deadline(f"{what} did not return in {guard.timeout:g} s (--timeout); nothing was checked")

        signal.signal(signal.SIGALRM, expired)
        signal.setitimer(signal.ITIMER_REAL, guard.timeout)


def _leave(guard: Guard) -> None:
    guard.depth = max(guard.depth - 1, 0)
    if guard.depth == 0:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _forward_deadlines(guard: Guard) -> Callable[[], None]:
    """Global forward hooks: the outermost module call of each forward pass runs under the deadline."""
    from torch.nn.modules import module as torch_module

    def before(module: nn.Module, args: Any) -> None:
        cls = type(module)
        ours = cls.__module__.startswith(("shapecheck.", "torch."))  # a wrapper around the user's module (prove's)
        _enter(guard, "the module's forward" if ours else f"{cls.__name__}.forward")

    def after(module: nn.Module, args: Any, output: Any) -> None:
        _leave(guard)

    handles = [torch_module.register_module_forward_pre_hook(before),
               torch_module.register_module_forward_hook(after, always_call=True)]
    previous = signal.getsignal(signal.SIGALRM)

    def undo() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for handle in handles:
            handle.remove()
        signal.signal(signal.SIGALRM, previous)

    return undo


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
        with _importing_from(os.path.dirname(absolute)), deadline(f"the import of {path}"):
            spec.loader.exec_module(module)
    except BaseException as error:  # noqa: BLE001 - any failure in user code is a usage error
        sys.modules.pop(module_name, None)
        if isinstance(error, (KeyboardInterrupt, Deadline)):
            raise
        raise UsageError(f"cannot import {path}: {first_line(error)}") from None
    return module


def _import_module(name: str) -> Any:
    try:
        with _importing_from(os.getcwd()), deadline(f"the import of {name}"):
            return importlib.import_module(name)
    except BaseException as error:  # noqa: BLE001
        if isinstance(error, (KeyboardInterrupt, Deadline)):
            raise
        raise UsageError(f"cannot import module {name}: {first_line(error)}") from None


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


# ---------------------------------------------------------------- roles and sizes


Sizes = Mapping[str, Any]


def complete_sizes(sizes: Sizes) -> dict[str, Any]:
    """``sizes`` with the derived ones added: d_head, d_model, kv_heads, rotary_dim and d_ff where missing."""
    full = {k: v for k, v in sizes.items() if v is not None}
    heads = full.get("heads")
    if heads and "d_model" in full and "d_head" not in full and full["d_model"] % heads == 0:
        full["d_head"] = full["d_model"] // heads
    if heads and "d_head" in full and "d_model" not in full:
        full["d_model"] = heads * full["d_head"]
    if heads:
        full.setdefault("kv_heads", heads)
    if "d_head" in full:
        full.setdefault("rotary_dim", full["d_head"])
    if "d_model" in full:
        full.setdefault("d_ff", 4 * full["d_model"])
    return full


def _fits(role: str, default: Any) -> bool:
    """Whether a default of this type can belong to ``role`` (``dim=(1, 2)`` is not a width)."""
    if default is _EMPTY or default is None:
        return True
    if role in ("causal", "bias"):
        return isinstance(default, bool)
    if role == "dropout":
        return isinstance(default, (float, int)) or hasattr(default, "p")
    if role == "attention_type":
        return isinstance(default, str)
    return isinstance(default, int) and not isinstance(default, bool)


def infer_roles(fields: list[tuple[str, Any]]) -> dict[str, str]:
    """Role of each (name, default): the vocabulary's, checked against the default; ambiguous widths are d_ff beside a real width."""
    roles = {name: role for name, default in fields if (role := constructor_role(name, default)) and _fits(role, default)}
    has_width = any(role == "d_model" and name not in AMBIGUOUS_WIDTHS for name, role in roles.items())
    if has_width:
        roles.update({name: "d_ff" for name, role in roles.items() if name in AMBIGUOUS_WIDTHS})
    return roles


def _role_value(role: str, sizes: dict[str, Any], default: Any) -> Any:
    value = sizes.get(role, ROLE_FALLBACKS.get(role))
    if role == "dropout" and hasattr(default, "p") and value is not None:
        return type(default)(value)  # a dropout module stays a module
    return value


@dataclass
class _Assigned:
    """The result of mapping one list of fields (constructor parameters or config fields)."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    replaced: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # required, unmapped


def assign(fields: list[tuple[str, Any]], sizes: Sizes, init: dict[str, Any], *, keep_defaults: bool,
           explicit: Collection[str] = ()) -> _Assigned:
    """Values for ``fields`` ((name, default or ``inspect.Parameter.empty``)) by role; ``init`` items used are consumed."""
    full, roles, out = complete_sizes(sizes), infer_roles(fields), _Assigned()
    for name, default in fields:
        role = roles.get(name)
        if name in init:
            out.values[name], out.sources[name] = _as_dtype(name, init.pop(name), default), "init"
        elif role is None and isinstance(default, (list, tuple)) and default and constructor_role(name, 1) == "heads" \
                and _overrides("heads", sizes, keep_defaults, explicit):  # Swin's num_heads=[3, 6, ...]: say it was kept
            out.values[name] = default
            out.sources[name] = f"default: a list, heads={sizes['heads']} not applied; --init '{name}=[...]' sets it"
        elif role is None or (value := _role_value(role, full, default)) is None:
            if default is _EMPTY:
                out.missing.append(name)
        elif default is _EMPTY:
            out.values[name], out.sources[name] = value, role
        elif _overrides(role, sizes, keep_defaults, explicit):
            out.values[name], out.sources[name] = value, role
            if not _same(value, default):
                out.replaced[name] = default
    return out


def _as_dtype(name: str, value: Any, default: Any) -> Any:
    """``--init dtype=float32``: a dtype's name given to a parameter whose default is a torch dtype, or named ``*dtype``."""
    if not isinstance(value, str) or not (isinstance(default, torch.dtype) or name.endswith("dtype")):
        return value
    found = getattr(torch, value.removeprefix("torch."), None)
    if not isinstance(found, torch.dtype):
        raise UsageError(f"--init {name}={value}: not a torch dtype (float32, float16, bfloat16, float64 ...)")
    return found


def _overrides(role: str, sizes: Sizes, keep_defaults: bool, explicit: Collection[str]) -> bool:
    if keep_defaults:
        return role in explicit
    return sizes.get(role) is not None


def _same(value: Any, default: Any) -> bool:
    if hasattr(default, "p") and hasattr(value, "p"):
        return type(value) is type(default) and value.p == default.p
    return type(value) is type(default) and value == default


# ---------------------------------------------------------------- config objects


class RoleAnswers:
    """A stand-in config object: each attribute read is answered by its role, or recorded as unanswered."""

    def __init__(self, sizes: Sizes, init: dict[str, Any]) -> None:
        self.__dict__["_sizes"] = complete_sizes(sizes)
        self.__dict__["_init"] = dict(init)
        self.__dict__["answered"] = {}
        self.__dict__["unanswered"] = []

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._init:
            value = self._init[name]
        elif name == "_attn_implementation":  # transformers' attention dispatch, read at forward: eager, as configs are built
            value = "eager"
        else:
            role = constructor_role(name)
            value = _role_value(role, self._sizes, None) if role else None
            if value is None:
                if name not in self.unanswered:
                    self.unanswered.append(name)
                raise AttributeError(f"{name!r} has no role shapecheck can answer")
        self.answered[name] = value
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        self._init[name] = value

    def __getitem__(self, name: str) -> Any:  # a dict config (``cfg["emb_dim"]``): keys answered by role, as attributes are
        try:
            return self.__getattr__(name)
        except AttributeError:
            raise KeyError(name) from None

    def __setitem__(self, name: str, value: Any) -> None:
        self._init[name] = value

    def __contains__(self, name: object) -> bool:
        try:
            self.__getattr__(str(name))
        except AttributeError:
            return False
        return True

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self.__getattr__(name)
        except AttributeError:
            if name in self.unanswered:
                self.unanswered.remove(name)  # the constructor has its own default
            return default

    def __repr__(self) -> str:
        return "RoleAnswers(" + ", ".join(f"{k}={v!r}" for k, v in self.answered.items()) + ")"


def _annotation_members(target: Target, param: inspect.Parameter) -> tuple[Any, ...]:
    func = target.obj.__init__ if target.is_class else target.obj
    try:
        annotation = typing.get_type_hints(func).get(param.name, param.annotation)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to the raw one
        annotation = param.annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _is_config_class(value: Any) -> bool:
    return inspect.isclass(value) and (
        dataclasses.is_dataclass(value) or hasattr(value, "to_dict") or (issubclass(value, tuple) and hasattr(value, "_fields"))
    )


def _config_fields(config_class: type) -> list[tuple[str, Any]]:
    """(name, default) of a dataclass, NamedTuple or class constructor; a no-argument class's public attributes."""
    if dataclasses.is_dataclass(config_class):
        return [(f.name, _field_default(f)) for f in dataclasses.fields(config_class) if f.init]
    if issubclass(config_class, tuple) and hasattr(config_class, "_fields"):
        defaults = getattr(config_class, "_field_defaults", {})
        return [(name, defaults.get(name, _EMPTY)) for name in config_class._fields]
    try:
        params = list(inspect.signature(config_class.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    named = [(p.name, p.default) for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if named:
        return named
    return [(k, v) for k, v in vars(config_class).items() if not k.startswith("_") and not callable(v) and not isinstance(v, (classmethod, staticmethod, property))]


def _field_default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    return _EMPTY if f.default_factory is dataclasses.MISSING else f.default_factory()


def _attributes_read(target: Target, name: str) -> set[str]:
    """Attributes the constructor reads off parameter ``name`` (``config.n_embd``), from its source; empty when unreadable."""
    func = target.obj.__init__ if target.is_class else target.obj
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return set()
    return {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name}


def _module_config_classes(target: Target, param: str) -> list[type]:
    """Config-like classes of the target's own module whose fields map a width or heads and hold every attribute read."""
    module = sys.modules.get(getattr(target.obj, "__module__", ""))
    if module is None:
        return []
    found, read = [], _attributes_read(target, param)
    for value in vars(module).values():
        if not inspect.isclass(value) or getattr(value, "__module__", "") != module.__name__ or issubclass(value, nn.Module):
            continue
        if not (_is_config_class(value) or value.__name__.lower().endswith(("config", "args", "params", "cfg"))):
            continue
        fields = _config_fields(value)
        roles = set(infer_roles(fields).values())
        if roles & {"d_model", "heads"} and read <= {name for name, _ in fields}:
            found.append((len(roles), value))
    return [cls for _, cls in sorted(found, key=lambda item: -item[0])]


def _transformers_config_classes(target: Target) -> list[type]:
    module = sys.modules.get(getattr(target.obj, "__module__", ""))
    if module is None or not module.__name__.startswith("transformers."):
        return []
    from transformers import PretrainedConfig  # a transformers class: its module imports its config

    found = [v for v in vars(module).values() if inspect.isclass(v) and issubclass(v, PretrainedConfig) and v is not PretrainedConfig]
    return found[:1] if len(found) == 1 else []


def _config_candidates(target: Target, param: inspect.Parameter) -> list[type]:
    annotated = [m for m in _annotation_members(target, param) if _is_config_class(m)]
    if annotated:  # a base class annotated (transformers' PreTrainedConfig): its subclass beside the target first
        own = _module_config_classes(target, param.name) + _transformers_config_classes(target)
        return [c for c in own if any(c is not a and issubclass(c, a) for a in annotated)] + annotated
    if param.name not in CONFIG_PARAMETERS:
        return []
    return _module_config_classes(target, param.name) + _transformers_config_classes(target)


def _instantiate(config_class: type, assigned: _Assigned) -> Any:
    if dataclasses.is_dataclass(config_class) or issubclass(config_class, tuple) or _takes_arguments(config_class):
        config = config_class(**assigned.values)
    else:
        config = config_class()
        for name, value in assigned.values.items():
            setattr(config, name, value)
    if getattr(config, "_attn_implementation", "") is None or hasattr(config, "_attn_implementation_internal"):
        with contextlib.suppress(Exception):
            config._attn_implementation = "eager"  # a standalone transformers layer: the plain softmax path
    return config


def _takes_arguments(config_class: type) -> bool:
    try:
        return len(inspect.signature(config_class.__init__).parameters) > 1
    except (TypeError, ValueError):
        return False


def _make_config(target: Target, classes: list[type], sizes: Sizes, init: dict[str, Any], *, keep_defaults: bool,
                 explicit: Collection[str]) -> tuple[Any, _Assigned]:
    """The first of ``classes`` that builds from the mapped values; a ``RoleAnswers`` object when none does."""
    for config_class in classes:
        fields = _config_fields(config_class)
        names = {name for name, _ in fields}
        trial = {k: v for k, v in init.items() if k in names or not dataclasses.is_dataclass(config_class)}
        assigned = assign(fields, sizes, trial, keep_defaults=keep_defaults, explicit=explicit)
        assigned.values.update(trial)  # init items the class takes through **kwargs
        if assigned.missing:
            continue
        try:
            config = _instantiate(config_class, assigned)
        except Exception:  # noqa: BLE001 - user config classes raise anything
            continue
        for key in assigned.values:
            init.pop(key, None)
        return config, assigned
    answers = RoleAnswers(sizes, init)
    init.clear()
    return answers, _Assigned()


def _config_source(config: Any, assigned: _Assigned) -> str:
    if isinstance(config, RoleAnswers):
        return "config: attributes answered by role"
    shown = [f"{k}={v!r}" + (f" (default {assigned.replaced[k]!r})" if k in assigned.replaced else "") for k, v in assigned.values.items()]
    return f"config: {type(config).__name__}(" + ", ".join(shown) + ")"


# ---------------------------------------------------------------- mapping and building


def _parameters(target: Target) -> list[inspect.Parameter]:
    func = target.obj.__init__ if target.is_class else target.obj
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in params[1 if target.is_class else 0:] if p.kind in kinds]


def map_arguments(target: Target, sizes: Optional[Sizes] = None, *, keep_defaults: bool, init: Optional[Mapping[str, Any]] = None,
                  explicit: Collection[str] = (), **size_values: Any) -> Construction:
    """Choose a value for every parameter of the constructor or factory (without calling it).

    ``sizes`` (or keywords: ``d_model=8, heads=2``) maps roles to values. Raises ``UsageError``
    naming every required parameter it cannot map, with the ``--init`` syntax.
    """
    sizes = {**(sizes or {}), **size_values}
    init = dict(init or {})
    params = _parameters(target)
    configs = {p.name: classes for p in params if (classes := _config_candidates(target, p)) or
               (p.name in CONFIG_PARAMETERS and p.default is _EMPTY)}
    plain = [(p.name, p.default) for p in params if p.name not in configs or p.name in init]
    assigned = assign(plain, sizes, init, keep_defaults=keep_defaults, explicit=explicit)
    arguments, sources = dict(assigned.values), dict(assigned.sources)
    for name, classes in configs.items():
        if name in arguments:
            continue
        config, fields = _make_config(target, classes, sizes, init, keep_defaults=keep_defaults, explicit=explicit)
        arguments[name], sources[name] = config, _config_source(config, fields)
    if assigned.missing:
        raise UsageError(_unmapped_message(target, assigned.missing))
    _check_leftover_init(target, params, init, arguments, sources)
    order = [p.name for p in params if p.name in arguments] + [k for k in arguments if k not in {p.name for p in params}]
    return Construction(target.name, {k: arguments[k] for k in order}, {k: sources[k] for k in order}, assigned.replaced)


def _unmapped_message(target: Target, missing: list[str]) -> str:
    """One line naming every required parameter without a role, and the --init syntax."""
    names = ", ".join(repr(n) for n in missing)
    example = ",".join(f"{n}=..." for n in missing)
    plural = "s" if len(missing) > 1 else ""
    return f"{target.spec}: cannot map required argument{plural} {names} of {target.name}; give {'them' if plural else 'it'} with --init '{example}'"


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


def _unanswered(construction: Construction) -> list[str]:
    return [name for value in construction.arguments.values() if isinstance(value, RoleAnswers) for name in value.unanswered]


def construct(target: Target, construction: Construction, device: str = "cpu") -> nn.Module:
    """Call the constructor or factory on ``device`` ("meta" or "cpu"); every failure is a one-line ``UsageError``."""
    for value in construction.arguments.values():
        if isinstance(value, RoleAnswers):
            value.unanswered.clear()
    try:
        with torch.device(device), deadline(f"the constructor of {target.name}"):
            module = target.obj(**construction.arguments)
    except Exception as error:  # noqa: BLE001 - user constructors raise anything
        missing = _unanswered(construction)
        if missing:
            raise UsageError(f"{target.spec}: {target.name} reads config attributes with no role shapecheck knows: "
                             f"{', '.join(missing)}; give them with --init '{missing[0]}=...'") from None
        raise UsageError(f"{target.spec}: the module fails to construct: {construction.describe()} raised {first_line(error)}; {INIT_HINT}") from None
    if not isinstance(module, nn.Module):
        raise UsageError(f"{target.spec}: factory {target.name} returned {type(module).__name__}, not an nn.Module")
    return module


CPU_BUDGET = 2**26  # elements a CPU fallback may allocate (256 MB of float32)


class _Budget(torch.overrides.TorchFunctionMode):
    """Stops a CPU construction once its tensors pass ``limit`` elements: only small models fall back."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit, self.elements = limit, 0

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor):
            self.elements += out.numel()
            if self.elements > self.limit:
                raise MemoryError(f"more than {self.limit:,} elements: too large to build on the CPU")
        return out


def construct_on_meta_or_cpu(target: Target, construction: Construction, budget: int = CPU_BUDGET) -> tuple[nn.Module, bool]:
    """(module, built on the CPU): on meta, no weights; a constructor that cannot run there is retried on the
    CPU while it allocates at most ``budget`` elements. When that fails too, the meta failure is raised."""
    try:
        return construct(target, construction, "meta"), False
    except UsageError as on_meta:
        try:
            with _Budget(budget):
                return construct(target, construction, "cpu"), True
        except UsageError:
            raise on_meta from None


def build(target: Target, sizes: Optional[Sizes] = None, *, keep_defaults: bool = False, init: Optional[Mapping[str, Any]] = None,
          explicit: Collection[str] = (), device: str = "cpu", **size_values: Any) -> tuple[nn.Module, Construction]:
    """``map_arguments`` then ``construct``: the module and what was passed."""
    construction = map_arguments(target, sizes, keep_defaults=keep_defaults, init=init, explicit=explicit, **size_values)
    return construct(target, construction, device), construction


def factory_for(target: Target, *, init: Optional[Mapping[str, Any]] = None, keep_defaults: bool = False,
                **fixed: Any) -> Callable[[int, int], nn.Module]:
    """A ``(d_model, heads) -> module`` function over ``target`` (what ``prove`` rebuilds with); ``fixed`` sizes stay."""

    def factory(d_model: int, heads: int) -> nn.Module:
        sizes = {**fixed, "d_model": d_model, "heads": heads}
        return build(target, sizes, keep_defaults=keep_defaults, init=init, explicit=("d_model", "heads"))[0]

    return factory


# ---------------------------------------------------------------- constructor constraints


@dataclass(frozen=True)
class Constraints:
    """What the constructor accepts, found by building on the meta device: ``d_head`` multiple, kv-head grouping."""

    d_head_multiple: int = 1
    kv_heads_divide: bool = False  # heads must be a multiple of kv_heads
    notes: tuple[str, ...] = ()


_MULTIPLES = (1, 2, 4, 8, 16, 32, 64)


def accepts(target: Target, sizes: Sizes, *, init: Optional[Mapping[str, Any]] = None, keep_defaults: bool = False) -> Optional[str]:
    """None when the constructor accepts ``sizes`` (built on the meta device), else the one-line reason."""
    try:
        build(target, sizes, keep_defaults=keep_defaults, init=init, device="meta")
    except UsageError as error:
        return str(error)
    return None


def probe_constraints(target: Target, *, init: Optional[Mapping[str, Any]] = None, keep_defaults: bool = False,
                      d_head_multiple: Optional[int] = None, heads: int = 2) -> Constraints:
    """The smallest head-size multiple the constructor accepts (1, 2, 4, 8 ... 64) and whether kv heads must divide heads.

    ``d_head_multiple`` given (the user's ``--d-head-multiple``) is taken as is. Raises ``UsageError``
    when no head size up to 64 builds, with the constructor's own reason.
    """
    notes: list[str] = []
    multiple = d_head_multiple
    if multiple is None:
        multiple = _smallest_multiple(target, heads, init, keep_defaults)
        if multiple > 1:
            notes.append(f"constraint found: the constructor rejects head size 1 and accepts multiples of {multiple}"
                         + (" (even head sizes)" if multiple == 2 else ""))
    else:
        notes.append(f"head size a multiple of {multiple} (--d-head-multiple)")
    kv_divide = _kv_heads_must_divide(target, multiple, init, keep_defaults)
    if kv_divide:
        notes.append("constraint found: heads must be a multiple of kv heads")
    return Constraints(multiple, kv_divide, tuple(notes))


def _smallest_multiple(target: Target, heads: int, init: Optional[Mapping[str, Any]], keep_defaults: bool) -> int:
    first = accepts(target, {"heads": heads, "d_head": 1}, init=init, keep_defaults=keep_defaults)
    if first is None:
        return 1
    for multiple in _MULTIPLES[1:]:
        if accepts(target, {"heads": heads, "d_head": multiple}, init=init, keep_defaults=keep_defaults) is None:
            odd = accepts(target, {"heads": heads, "d_head": 3 * multiple}, init=init, keep_defaults=keep_defaults)
            return multiple if odd is None else 2 * multiple  # 2 builds but 6 does not: a power of two, take the next
    raise UsageError(f"{first} (and with every head size up to 64)")


def _kv_heads_must_divide(target: Target, multiple: int, init: Optional[Mapping[str, Any]], keep_defaults: bool) -> bool:
    """Whether heads=3, kv_heads=2 is rejected while heads=4, kv_heads=2 builds."""
    odd = accepts(target, {"heads": 3, "kv_heads": 2, "d_head": multiple}, init=init, keep_defaults=keep_defaults)
    even = accepts(target, {"heads": 4, "kv_heads": 2, "d_head": multiple}, init=init, keep_defaults=keep_defaults)
    return odd is not None and even is None


def has_role(target: Target, role: str) -> bool:
    """Whether a constructor parameter, or a field of the config it takes, carries ``role``."""
    params = _parameters(target)
    if role in infer_roles([(p.name, p.default) for p in params]).values():
        return True
    for param in params:
        for config_class in _config_candidates(target, param):
            if role in infer_roles(_config_fields(config_class)).values():
                return True
    return False
