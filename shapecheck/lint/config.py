"""``[tool.shapecheck]`` in pyproject.toml: which codes lint reports, and which severity fails.

    [tool.shapecheck]
    select = ["SC1"]          # code prefixes to report (default: every code but the opt-in rules)
    extend-select = ["SC102"] # codes reported besides ``select``; an opt-in rule (messages.OPT_IN) needs its exact code
    ignore = ["SC110"]        # code prefixes to drop
    fail-on = "warning"       # error | warning | info (default: warning)
    exclude = ["build"]       # path patterns not searched (replaces the defaults: .*, __pycache__, node_modules)
    extend-exclude = ["gen"]  # path patterns not searched, in addition to ``exclude``
    per-file-ignores = {"tests/*" = ["SC111"]}   # code prefixes dropped in files matching a pattern
    mask-conventions = {attention_mask = "masked"}  # a mask parameter's polarity: keep (True = attend) | masked

Patterns are globs (``fnmatch``) matched against the whole path and against each of its parts, as ruff does.

Reading needs ``tomllib`` (Python 3.11+) or ``tomli``; without either the file is skipped
and ``LintConfig.note`` says so.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Optional, Sequence

from shapecheck.errors import ConfigError
from shapecheck.lint.messages import CODES, OPT_IN, SEVERITIES
from shapecheck.reading import Unreadable, read_bounded

try:  # Python 3.11+
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    try:
        import tomli as _toml  # type: ignore[no-redef]
    except ModuleNotFoundError:
        _toml = None  # type: ignore[assignment]

DEFAULT_FAIL_ON = "warning"
MAX_CONFIG_BYTES = 2**20
KEYS: tuple[str, ...] = ("select", "extend-select", "ignore", "fail-on", "exclude", "extend-exclude", "per-file-ignores",
                         "mask-conventions")  # the keys [tool.shapecheck] may hold
DEFAULT_EXCLUDE: tuple[str, ...] = (".*", "__pycache__", "node_modules")  # never searched unless ``exclude`` says
MASK_CONVENTIONS: tuple[str, ...] = ("keep", "masked")


@dataclass(frozen=True)
class LintConfig:
    """Code prefixes to report and to drop, the failing severity, and where they came from."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str = DEFAULT_FAIL_ON
    source: Optional[str] = None
    note: Optional[str] = None
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (pattern, code prefixes)
    mask_conventions: tuple[tuple[str, str], ...] = field(default=())  # (parameter name, keep | masked)
    extend_select: tuple[str, ...] = ()  # codes reported besides ``select`` (an opt-in rule only by its exact code)

    def selects(self, code: str, path: Optional[str] = None) -> bool:
        if code in OPT_IN and code not in self.select + self.extend_select:
            return False
        chosen = not self.select or any(code.startswith(p) for p in self.select + self.extend_select)
        ignored = self.ignore + tuple(c for pattern, codes in self.per_file_ignores
                                      if path is not None and matches(path, pattern) for c in codes)
        return chosen and not any(code.startswith(p) for p in ignored)

    def excludes(self, path: str) -> bool:
        """Whether a path met while searching a directory is left out (never a path named explicitly)."""
        return any(matches(path, pattern) for pattern in self.exclude + self.extend_exclude)

    def fails(self, severity: str) -> bool:
        return SEVERITIES.index(severity) >= SEVERITIES.index(self.fail_on)


def matches(path: str, pattern: str) -> bool:
    """ruff's reading of a pattern: the whole path, its tail, or any one of its parts matches the glob."""
    pure = PurePath(path)
    posix = pure.as_posix()
    return fnmatch.fnmatchcase(posix, pattern) or fnmatch.fnmatchcase(posix, f"*/{pattern}") \
        or any(fnmatch.fnmatchcase(part, pattern) for part in pure.parts)


def parse_per_file_ignores(items: Sequence[str], option: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``PATTERN:CODE`` items (``tests/*:SC111``) into (pattern, code prefixes); ConfigError naming a bad one."""
    found = []
    for item in items:
        pattern, sep, code = item.rpartition(":")
        if not sep or not pattern.strip():
            raise ConfigError(f"{option}: {item!r} is not PATTERN:CODE (e.g. 'tests/*:SC111')")
        found.append((pattern.strip(), check_codes([code], option)))
    return tuple(found)


def check_codes(prefixes: Sequence[str], option: str) -> tuple[str, ...]:
    """Upper-cased prefixes; ConfigError naming the valid codes if one matches none."""
    found = tuple(p.strip().upper() for p in prefixes if p.strip())
    for prefix in found:
        if not any(code.startswith(prefix) for code in CODES):
            raise ConfigError(f"{option}: {prefix!r} matches no code; valid codes: {', '.join(CODES)}")
    return found


def check_severity(value: object, option: str) -> str:
    if value not in SEVERITIES:
        raise ConfigError(f"{option}={value!r}; choose one of {', '.join(SEVERITIES)}")
    return str(value)


def find_pyproject(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml in ``start`` or a parent directory (a path that does not resolve, such as a
    symbolic-link loop, is looked up from the directory that holds it)."""
    try:
        here = start.resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symbolic-link loop, before Python 3.13
        here = Path(os.path.abspath(start)).parent
    for folder in [here, *here.parents] if here.is_dir() else list(here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file() or candidate.is_fifo() or candidate.is_char_device():  # reported, not skipped
            return candidate
    return None


def load_config(pyproject: Optional[Path]) -> LintConfig:
    """The ``[tool.shapecheck]`` table of ``pyproject`` (defaults when absent)."""
    if pyproject is None:
        return LintConfig()
    if _toml is None:
        return LintConfig(note=f"{pyproject}: [tool.shapecheck] not read (needs Python 3.11+ or tomli)")
    try:  # never more than a config file can be, never waiting on a FIFO
        data = read_bounded(str(pyproject), MAX_CONFIG_BYTES)
    except Unreadable as error:
        raise ConfigError(f"{pyproject}: {error.reason}") from None
    try:
        document = _toml.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, _toml.TOMLDecodeError, RecursionError) as error:
        reason = error
        raise ConfigError(f"{pyproject}: cannot read: {reason}") from None
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{pyproject}: 'tool' must be a table ([tool.shapecheck]), got {tool!r}")
    table = tool.get("shapecheck", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.shapecheck] must be a table, got {table!r}")
    return from_table(table, str(pyproject))


def from_table(table: dict, source: str) -> LintConfig:
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(f"{source}: unknown key {unknown[0]!r} in [tool.shapecheck]; valid keys: {', '.join(KEYS)}")
    lists = {}
    for key in ("select", "extend-select", "ignore"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: [tool.shapecheck] {key} must be a list of code prefixes, got {value!r}")
        lists[key] = check_codes(value, f"[tool.shapecheck] {key}")
    fail_on = check_severity(table.get("fail-on", DEFAULT_FAIL_ON), "[tool.shapecheck] fail-on")
    patterns = {}
    for key in ("exclude", "extend-exclude"):
        value = table.get(key, list(DEFAULT_EXCLUDE) if key == "exclude" else [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: [tool.shapecheck] {key} must be a list of path patterns, got {value!r}")
        patterns[key] = tuple(value)
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict) or not all(
            isinstance(v, list) and all(isinstance(c, str) for c in v) for v in per_file.values()):
        raise ConfigError(f"{source}: [tool.shapecheck] per-file-ignores must map path patterns to lists of codes, "
                          f"got {per_file!r}")
    ignores = tuple((pattern, check_codes(codes, "[tool.shapecheck] per-file-ignores"))
                    for pattern, codes in per_file.items())
    conventions = table.get("mask-conventions", {})
    if not isinstance(conventions, dict) or not all(v in MASK_CONVENTIONS for v in conventions.values()):
        raise ConfigError(f"{source}: [tool.shapecheck] mask-conventions must map mask parameter names to one of "
                          f"{', '.join(MASK_CONVENTIONS)}, got {conventions!r}")
    return LintConfig(lists["select"], lists["ignore"], fail_on, source, extend_select=lists["extend-select"],
                      exclude=patterns["exclude"],
                      extend_exclude=patterns["extend-exclude"], per_file_ignores=ignores,
                      mask_conventions=tuple(conventions.items()))
