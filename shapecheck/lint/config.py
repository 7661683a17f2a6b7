"""``[tool.shapecheck]`` in pyproject.toml: which codes lint reports, and which severity fails.

    [tool.shapecheck]
    select = ["SC1"]          # code prefixes to report (default: every code)
    ignore = ["SC102"]        # code prefixes to drop
    fail-on = "warning"       # error | warning | info (default: warning)

Reading needs ``tomllib`` (Python 3.11+) or ``tomli``; without either the file is skipped
and ``LintConfig.note`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from shapecheck.errors import ConfigError
from shapecheck.lint.messages import CODES, SEVERITIES

try:  # Python 3.11+
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    try:
        import tomli as _toml  # type: ignore[no-redef]
    except ModuleNotFoundError:
        _toml = None  # type: ignore[assignment]

DEFAULT_FAIL_ON = "warning"
MAX_CONFIG_BYTES = 2**20
KEYS: tuple[str, ...] = ("select", "ignore", "fail-on")  # the keys [tool.shapecheck] may hold


@dataclass(frozen=True)
class LintConfig:
    """Code prefixes to report and to drop, the failing severity, and where they came from."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str = DEFAULT_FAIL_ON
    source: Optional[str] = None
    note: Optional[str] = None

    def selects(self, code: str) -> bool:
        chosen = not self.select or any(code.startswith(p) for p in self.select)
        return chosen and not any(code.startswith(p) for p in self.ignore)

    def fails(self, severity: str) -> bool:
        return SEVERITIES.index(severity) >= SEVERITIES.index(self.fail_on)


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
    """The nearest pyproject.toml in ``start`` or a parent directory."""
    here = start.resolve()
    for folder in [here, *here.parents] if here.is_dir() else list(here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(pyproject: Optional[Path]) -> LintConfig:
    """The ``[tool.shapecheck]`` table of ``pyproject`` (defaults when absent)."""
    if pyproject is None:
        return LintConfig()
    if _toml is None:
        return LintConfig(note=f"{pyproject}: [tool.shapecheck] not read (needs Python 3.11+ or tomli)")
    try:
        with open(pyproject, "rb") as handle:  # never more than a config file can be
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{pyproject}: larger than {MAX_CONFIG_BYTES // 2**20} MiB, not read")
        document = _toml.loads(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, _toml.TOMLDecodeError, RecursionError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
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
    for key in ("select", "ignore"):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: [tool.shapecheck] {key} must be a list of code prefixes, got {value!r}")
        lists[key] = check_codes(value, f"[tool.shapecheck] {key}")
    fail_on = check_severity(table.get("fail-on", DEFAULT_FAIL_ON), "[tool.shapecheck] fail-on")
    return LintConfig(lists["select"], lists["ignore"], fail_on, source)
