"""The one way shapecheck reads a file it is given: bounded, and never blocking.

lint reads source files and ``pyproject.toml`` through it, report/audit/prove a ``--config`` file.

The file is opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a FIFO, a device
or a socket behind the name is refused before any read waits on it (no race between a check and the open), and
at most ``limit`` bytes are read (``/dev/zero`` is endless).
"""

from __future__ import annotations

import errno
import os
import stat


class Unreadable(Exception):
    """Why a file was not read: ``reason`` is one short phrase (``not a regular file (a FIFO): not read``);
    ``kind`` is what went wrong, for a caller that words it its own way ("directory", "special", "too large",
    "cannot read"), and ``detail`` the particulars (``a FIFO``, the system's reason)."""

    def __init__(self, reason: str, kind: str = "cannot read", detail: str = "") -> None:
        super().__init__(reason)
        self.reason, self.kind, self.detail = reason, kind, detail or reason


def _cannot_read(detail: str) -> Unreadable:
    return Unreadable(f"cannot read: {detail}", "cannot read", detail)


def _too_large(limit: int) -> Unreadable:
    return Unreadable(f"larger than {_size(limit)}: not read", "too large")


def read_bounded(path: str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; ``Unreadable`` otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        dangling = error.errno == errno.ENOENT and os.path.islink(path)
        if error.errno == errno.ELOOP:
            raise Unreadable("symbolic-link loop") from None
        if dangling:
            raise Unreadable("dangling symbolic link") from None
        raise _cannot_read(os_reason(error)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise Unreadable("a directory, not a file", "directory")
        if not stat.S_ISREG(info.st_mode):
            kind = kind_of(info.st_mode)
            raise Unreadable(f"not a regular file ({kind}): not read", "special", kind)
        if info.st_size > limit:
            raise _too_large(limit)
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            data = handle.read(limit + 1)
    except OSError as error:
        raise _cannot_read(os_reason(error)) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > limit:
        raise _too_large(limit)
    return data


def kind_of(mode: int) -> str:
    """What a file that is not regular is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a regular file"


def os_reason(error: OSError) -> str:
    return error.strerror or error.__class__.__name__


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit >= 2**20 else f"{limit} bytes"
