"""The README's examples as data: console sessions (``$ shapecheck ...`` and the output shown) and Python blocks.

A console block is a fenced ```console block; each ``$ `` line is a command and the
lines up to the next one are its output as pasted from a real run. A line ``...``
stands for any number of lines (an abridged output). Volatile numbers (timings)
are masked on both sides before comparing. ``SHAPECHECK_UPDATE_README=1`` rewrites
the outputs from real runs, keeping each ``...`` where it was.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```(\w*)\s*$")
_TIMING = re.compile(r"\d+(?:\.\d+)?\s?(?:s|ms|µs)\b")
WILDCARD = "..."


@dataclass
class Session:
    """One ``$ command`` of a console block and the output the README shows for it."""

    line: int  # 1-based line of the ``$`` in README.md
    command: str
    expected: list[str]

    @property
    def argv(self) -> list[str]:
        words = shlex.split(self.command)
        if not words or words[0] != "shapecheck":
            raise ValueError(f"README.md:{self.line}: console commands must start with 'shapecheck': {self.command}")
        return words[1:]


def blocks(text: str) -> list[tuple[str, int, list[str]]]:
    """(language, first line number, lines) of every fenced block."""
    found, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        found.append((match.group(1), i + 2, lines[i + 1:end]))
        i = end + 1
    return found


def sessions(text: str) -> list[Session]:
    out: list[Session] = []
    for language, first, lines in blocks(text):
        if language != "console":
            continue
        for offset, line in enumerate(lines):
            if line.startswith("$ "):
                out.append(Session(first + offset, line[2:].strip(), []))
            elif out and out[-1].line >= first:
                out[-1].expected.append(line)
    return out


def python_blocks(text: str) -> list[tuple[int, str]]:
    return [(first, "\n".join(lines)) for language, first, lines in blocks(text) if language == "python"]


def mask(line: str) -> str:
    return _TIMING.sub("<time>", line.rstrip())


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` fits ``expected``, ``...`` lines matching any run of lines."""
    pattern = "\n".join(re.escape(mask(line)) if line.strip() != WILDCARD else "(?:.*\n?)*?" for line in expected)
    return re.fullmatch(pattern.replace("\n(?:.*\n?)*?\n", "\n(?:.*\n)*?"), "\n".join(mask(a) for a in actual)) is not None


def abridge(expected: list[str], actual: list[str]) -> list[str]:
    """``actual`` with the expected block's ``...`` kept: as many lines before and after it as before."""
    if WILDCARD not in [line.strip() for line in expected]:
        return actual
    cut = [line.strip() for line in expected].index(WILDCARD)
    after = len(expected) - cut - 1
    return actual[:cut] + [WILDCARD] + (actual[len(actual) - after:] if after else [])
