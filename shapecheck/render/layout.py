"""What every renderer shares: the width to draw at, tables that fit it, JSON with the verdict fields.

Tables never draw wider than ``width()`` (the terminal's, ``COLUMNS``, else 80):
columns marked ``fold`` wrap their text inside the cell, the others keep their
values whole, so a row grows taller instead of spilling onto the next line.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Optional, TextIO

DEFAULT_WIDTH = 80


@dataclass(frozen=True)
class Column:
    """A table column: its header, alignment, and whether long text folds inside the cell."""

    name: str
    justify: Literal["left", "right", "center"] = "left"
    fold: bool = False
    style: Optional[str] = None


def width() -> int:
    """The terminal's width (``COLUMNS`` when set; 80 when output is not a terminal)."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def console(at: Optional[int] = None) -> Any:
    """A recording rich console of ``at`` columns (default ``width()``) that prints text as given."""
    from rich.console import Console

    return Console(record=True, width=at or width(), file=io.StringIO(), emoji=False, highlight=False,
                   color_system=None, soft_wrap=False)


def table(columns: Sequence[Column], rows: Iterable[Sequence[str]], *, title: Optional[str] = None,
          show_lines: bool = False) -> Any:
    """A rich ``Table`` with ``columns``; cells are plain text (no markup is interpreted)."""
    from rich.table import Table
    from rich.text import Text

    grid = Table(title=title, show_lines=show_lines, box=_box(), pad_edge=False, collapse_padding=True)
    for column in columns:
        grid.add_column(column.name, justify=column.justify, overflow="fold" if column.fold else "ellipsis",
                        no_wrap=not column.fold, style=column.style)
    for row in rows:
        grid.add_row(*(cell if not isinstance(cell, str) else Text(cell) for cell in row))
    return grid


def _box() -> Any:
    from rich import box

    return box.SIMPLE_HEAD


def text(*renderables: Any, at: Optional[int] = None) -> str:
    """``renderables`` (tables, strings) drawn at ``at`` columns and returned as text; strings wrap at word breaks."""
    out = console(at)
    for item in renderables:
        out.print(item, markup=False) if isinstance(item, str) else out.print(item)
    return out.export_text()


def as_json(data: dict[str, Any], exit_code: int) -> str:
    """``data`` as indented JSON with the verdict fields first: ``{"ok": ..., "exit_code": ..., ...}``."""
    return json.dumps({"ok": exit_code == 0, "exit_code": exit_code, **data}, indent=2, default=str) + "\n"


class StatusLine:
    """One line on stderr, rewritten in place while long work runs (only on a terminal), cleared at the end."""

    def __init__(self, stream: Optional[TextIO] = None) -> None:
        self.stream = stream or sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())

    def __call__(self, text: str) -> None:
        if self.live:
            self.stream.write("\r\x1b[2K" + text[: width() - 1])
            self.stream.flush()

    def __enter__(self) -> "StatusLine":
        return self

    def __exit__(self, kind: Optional[type], error: Optional[BaseException], trace: Optional[TracebackType]) -> None:
        self("")
