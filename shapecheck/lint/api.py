"""Lint entry points: parse, run pyflakes (undefined names) and the checker, apply noqa, sort.

Never imports or executes the code it reads, never writes to it. A file that
cannot be parsed (syntax error, not UTF-8, binary) is a finding, not a crash.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import gc
import io
import os
import re
import stat
import sys
import tokenize
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, Optional, Sequence

from pyflakes import checker as pyflakes_checker
from pyflakes import messages as pyflakes_messages

from shapecheck.errors import UsageError
from shapecheck.lint import messages as msg
from shapecheck.lint.checker import Checker
from shapecheck.lint.config import LintConfig
from shapecheck.reading import Unreadable, kind_of, os_reason, read_bounded

_PYFLAKES_UNDEFINED = (pyflakes_messages.UndefinedName, pyflakes_messages.UndefinedLocal,
                       pyflakes_messages.UndefinedExport)
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_PYFLAKES_CODES = frozenset({"F821", "F822", "F823"})  # flake8's names for pyflakes' undefined names
_PYTHON_SUFFIXES = frozenset({".py", ".pyi", ".pyw"})
_JAXTYPING = frozenset({"Float", "Int", "Bool", "Shaped", "Num", "Real", "Integer", "Inexact", "Complex", "UInt",
                        "Key", "BFloat16", "Float16", "Float32", "Float64", "Int8", "Int16", "Int32", "Int64",
                        "UInt8", "UInt16", "UInt32", "UInt64", "Complex64", "Complex128"})


def lint_source(source: str, path: str = "<string>", config: Optional[LintConfig] = None) -> list[msg.Finding]:
    """Findings for one module's source text, sorted by position."""
    chosen = config or LintConfig()
    left_out = frozenset(code for code in msg.CODES if not chosen.selects(code, path))
    found = _analyse(source, path, dict(chosen.mask_conventions), left_out)
    return _finish(found, source, config)


def lint_stream(stream: BinaryIO, path: str, config: Optional[LintConfig] = None) -> list[msg.Finding]:
    """Findings for source read from a stream (``-`` for stdin), at most ``MAX_BYTES`` of it, shown as ``path``."""
    try:
        data = stream.read(MAX_BYTES + 1)
    except OSError as error:
        return _finish([msg.FileNotParsed.finding(path, 1, 1, f"cannot read: {_os_reason(error)}")], "", config)
    if len(data) > MAX_BYTES:
        return _finish([msg.FileNotParsed.finding(path, 1, 1, f"larger than {MAX_BYTES // 2**20} MiB: not read")],
                       "", config)
    return lint_bytes(data, path, config)


def lint_bytes(data: bytes, path: str, config: Optional[LintConfig] = None) -> list[msg.Finding]:
    """Findings for a file's raw bytes: decoding problems and empty files are findings too."""
    if b"\x00" in data:
        return _finish([msg.FileNotParsed.finding(path, 1, 1, "binary file (contains NUL bytes)")], "", config)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        source = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        detail = error.msg if isinstance(error, SyntaxError) else str(error)
        reason = f"not valid text ({detail})"
        return _finish([msg.FileNotParsed.finding(path, 1, 1, reason)], "", config)
    return lint_source(source.removeprefix("\ufeff"), path, config)


MAX_BYTES = 8 * 2**20  # lint reads at most this much of a file: no source file is larger, /dev/zero is endless


def lint_file(path: str, config: Optional[LintConfig] = None) -> list[msg.Finding]:
    """Findings for one file. Whatever the path is (a symlink loop, a dangling link, a FIFO, a device, an
    unreadable file or directory, a huge file), the answer is one SC001 finding, never a hang or a traceback."""
    problem = _unreadable(path)
    if problem is None:
        try:
            return lint_bytes(read_bounded(path, MAX_BYTES), path, config)
        except Unreadable as error:
            problem = error.reason
    return _finish([msg.FileNotParsed.finding(path, 1, 1, problem)], "", config)


def _unreadable(path: str) -> Optional[str]:
    """Why ``path`` cannot be read as a source file without blocking, or None (checked before ``open``,
    which would wait forever on a FIFO)."""
    try:
        info = os.stat(path)
    except OSError as error:
        dangling = os.path.islink(path) and error.errno == errno.ENOENT
        return "dangling symbolic link" if dangling else f"cannot read: {_os_reason(error)}"
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        try:
            os.listdir(path)
        except OSError as error:
            return f"cannot read directory: {_os_reason(error)}"
        return "a directory, not a file"
    if not stat.S_ISREG(mode):
        return f"not a regular file ({kind_of(mode)}): not read"
    if info.st_size > MAX_BYTES:
        return f"larger than {MAX_BYTES // 2**20} MiB ({info.st_size} bytes): not read"
    return None


_os_reason = os_reason


def lint_paths(paths: Sequence[str], config: Optional[LintConfig] = None,
               jobs: int = 1) -> tuple[int, list[msg.Finding]]:
    """(files linted, findings) for files and directories (``*.py`` recursively), in file order.

    ``jobs`` > 1 lints files in that many processes; the output is the same, in the same order.
    UsageError if a path is missing or a file named explicitly is not Python.
    """
    files = list(python_files(paths, config))
    workers = min(jobs, len(files))
    if workers <= 1:
        per_file = [lint_file(file, config) for file in files]
    else:
        with ProcessPoolExecutor(workers) as pool:
            per_file = list(pool.map(lint_file, files, [config] * len(files), chunksize=4))
    return len(files), [f for found in per_file for f in found]


def python_files(paths: Iterable[str], config: Optional[LintConfig] = None) -> Iterator[str]:
    """The files to lint: each path named, and ``*.py`` under each directory named, less what ``config``
    excludes there (by default hidden directories, ``__pycache__`` and ``node_modules``)."""
    config = config or LintConfig()
    for path in paths:
        if os.path.isdir(path):
            yield from _walk(path, config)
        elif os.path.islink(path) and not os.path.exists(path):
            raise UsageError(f"{path}: a dangling or looping symbolic link")
        elif not os.path.exists(path):
            raise UsageError(f"no such file or directory: {path}")
        elif not is_python_file(path):
            raise UsageError(f"not a Python file: {path} (lint reads .py files; directories are searched for *.py)")
        else:
            yield path


def is_python_file(path: str) -> bool:
    """A ``.py``/``.pyi``/``.pyw`` file, or an extension-less script whose first line runs python."""
    suffix = Path(path).suffix
    if suffix:
        return suffix in _PYTHON_SUFFIXES
    if _unreadable(path) is not None:
        return False  # never open a FIFO or a device to look at its first line
    try:
        with open(path, "rb") as handle:
            first = handle.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def _walk(root: str, config: LintConfig) -> Iterator[str]:
    """``*.py`` under ``root`` (symbolic links to directories are not followed); a directory that cannot be
    read is yielded itself, so that ``lint_file`` reports it instead of skipping it silently."""
    unreadable: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=lambda error: unreadable.append(error.filename)):
        yield from (d for d in unreadable if d)
        unreadable.clear()
        inside = os.path.relpath(dirpath, root)  # patterns read the path below the directory named
        dirnames[:] = sorted(d for d in dirnames if not config.excludes(os.path.join(inside, d)))
        for name in sorted(filenames):
            if name.endswith(".py") and not config.excludes(os.path.join(inside, name)):
                yield str(Path(dirpath, name))
    yield from (d for d in unreadable if d)


def _analyse(source: str, path: str, conventions: Optional[dict[str, str]] = None,
             left_out: frozenset[str] = frozenset()) -> list[msg.Finding]:
    """The findings of every check (and pyflakes' undefined names); checks whose every code is in ``left_out``
    are not run."""
    with _no_cycle_collection():
        return _analyse_tree(source, path, conventions, left_out)


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """One file's analysis makes many short-lived objects (pyflakes links each node to its parent): the cycle
    collector would sweep the whole heap again and again while they live, so it is paused until the file is done
    and runs again after. Memory stays bounded by one file's analysis (at most ``MAX_BYTES`` of
    source)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _analyse_tree(source: str, path: str, conventions: Optional[dict[str, str]],
                  left_out: frozenset[str] = frozenset()) -> list[msg.Finding]:
    if not source.strip():
        return [] if os.path.basename(path) == "__init__.py" else [msg.EmptyFile.finding(path, 1, 1)]
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as error:
        line, col = error.lineno or 1, error.offset or 1
        return [msg.FileNotParsed.finding(path, line, max(col, 1), f"syntax error: {error.msg}")]
    except (ValueError, MemoryError, RecursionError) as error:
        return [msg.FileNotParsed.finding(path, 1, 1, f"{error.__class__.__name__}: {error}")]
    try:
        return _undefined_names(tree, path) + Checker(tree, path, conventions or {}, source, left_out).findings
    except RecursionError:
        return [msg.AnalysisStopped.finding(path, 1, 1, "expressions nested too deeply")]
    except Exception as error:  # noqa: BLE001 - a gap in the analysis must not stop the other files
        return [msg.AnalysisStopped.finding(path, 1, 1, f"internal error ({error.__class__.__name__}: {error})")]


class _Pyflakes(pyflakes_checker.Checker):  # type: ignore[misc]
    """pyflakes, reading jaxtyping's ``Float[Tensor, "batch seq"]`` strings as axis names, not code."""

    def SUBSCRIPT(self, node: ast.Subscript) -> None:
        if _is_jaxtyping(node):
            self.handleNode(node.value, node)
            self.handleNode(node.slice.elts[0], node)  # type: ignore[attr-defined]
            return
        super().SUBSCRIPT(node)

    def handleStringAnnotation(self, *args: object) -> None:
        """A string annotation is never evaluated at run time: a name missing there crashes nothing."""

    def handleAnnotation(self, annotation: ast.AST, node: ast.AST) -> None:
        if self._postponed():
            return  # postponed (``from __future__ import annotations``, Python 3.14): never evaluated either
        self.handleNode(annotation, node)  # evaluated when the function is defined, like any expression

    def CALL(self, node: ast.Call) -> None:
        """pyflakes asks at each call whether it is one of ``typing``'s (``cast("T", x)``, ``TypeVar``, ...), to
        read its strings as annotations: only undefined names are kept here and string annotations are not read,
        so that matters only where annotations are postponed (a name bound by a bare annotation counts there)."""
        if self._postponed():
            super().CALL(node)
        else:
            self.handleChildren(node)

    def _postponed(self) -> bool:
        return self.annotationsFutureEnabled or sys.version_info >= (3, 14)


def _is_jaxtyping(node: ast.Subscript) -> bool:
    name = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", None)
    index = node.slice
    return (name in _JAXTYPING and isinstance(index, ast.Tuple) and len(index.elts) == 2
            and isinstance(index.elts[1], ast.Constant) and isinstance(index.elts[1].value, str))


def _undefined_names(tree: ast.Module, path: str) -> list[msg.Finding]:
    """pyflakes' undefined-name messages, as SC111."""
    found = _Pyflakes(tree, filename=path)
    return [
        _export(msg.UndefinedName.finding(path, m.lineno, m.col + 1, m.message % m.message_args), m)
        for m in found.messages if isinstance(m, _PYFLAKES_UNDEFINED)
    ]


def _export(finding: msg.Finding, message: object) -> msg.Finding:
    """A name in ``__all__`` that the module does not define breaks only ``import *`` (and lazy-import modules,
    such as transformers', define theirs at run time): information, not an error."""
    if isinstance(message, pyflakes_messages.UndefinedExport):
        return replace(finding, severity="info")
    return finding


def _finish(found: list[msg.Finding], source: str, config: Optional[LintConfig]) -> list[msg.Finding]:
    lines = source.splitlines()
    config = config or LintConfig()  # the defaults leave the opt-in rules out too
    kept = [f for f in found if config.selects(f.code, f.path) and not _suppressed(f, lines)]
    specific = {(f.path, f.line) for f in kept if f.code not in msg.GENERIC}
    kept = [f for f in kept if f.code not in msg.GENERIC or (f.path, f.line) not in specific]
    return sorted(kept, key=lambda f: (f.path, f.line, f.col, f.code))


def _suppressed(finding: msg.Finding, lines: list[str]) -> bool:
    """``# noqa`` (every code) or ``# noqa: SC104, SC106`` on the finding's line."""
    if not 1 <= finding.line <= len(lines) or "noqa" not in lines[finding.line - 1].lower():
        return False
    match = _NOQA.search(lines[finding.line - 1])
    if match is None:
        return False
    codes = match.group("codes")
    if codes is None:
        return True
    listed = {c.upper() for c in re.split(r"[\s,]+", codes)}
    return finding.code in listed or (finding.code == "SC111" and bool(listed & _PYFLAKES_CODES))
